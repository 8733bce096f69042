"""What the drill says, in English and in Vietnamese (the language of the source deck).

Templates take the card's formatted numbers, so both languages state the same
figures with the same units. Keys: `q.KIND[.TARGET]` questions, `d.KIND`
derivations, `m.NAME` usual mistakes, `v.NAME` verdicts, `ui.*` the session.
"""

from __future__ import annotations

from inferlab.drill.cards import Card
from inferlab.errors import InferlabError

LANGS = ("en", "vi")

_EN = {
    "setup.1": "{model} in {dtype} ({weights} of weights, {kv_token} of KV cache per "
    "token) on one {hw} ({bw}, {flops}, {mem}).",
    "setup.n": "{model} in {dtype} ({weights} of weights, {kv_token} of KV cache per "
    "token) on {tp} x {hw} with tensor parallelism ({bw}, {flops}, {mem} each).",
    "q.ceiling": "{setup} One user, {context} tokens of context. What is the decode "
    "floor per token, and so the ceiling per user?",
    "q.claim": "{setup} One user. A colleague's benchmark reports {claimed} tok/s per "
    "user. What is the ceiling per user, and can the claim be true?",
    "q.mbu": "{setup} One user; the measured decode step (TPOT) is {measured}. What is the MBU?",
    "q.gpu-util": "{setup} One user chats. The dashboard shows GPU-util 100 %, power at "
    "{power} % of its cap and {measured} per decode token. The manager wants more "
    "GPUs. How much of the memory bandwidth is really used (MBU)?",
    "q.batching.per_user": "{setup} {batch} users decode together, each holding "
    "{context} tokens of KV. What rate does each user see?",
    "q.batching.total": "{setup} {batch} users decode together, each holding "
    "{context} tokens of KV. What total throughput does it produce?",
    "q.max-batch": "{setup} Each sequence holds {context} tokens. How many sequences "
    "fit in memory beside the weights?",
    "q.prefill.time": "{setup} How long does the prefill of a {prompt}-token prompt take?",
    "q.prefill.stall": "{setup} {streams} users are streaming when someone pastes a "
    "{prompt}-token document. For how many decode steps does every stream stall?",
    "q.ridge": "{setup} What is the ridge point, in FLOP per byte?",
    "q.crossover.without_kv": "{setup} Short contexts, so no KV to speak of. At what "
    "batch does decode turn compute-bound?",
    "q.crossover.with_kv": "{setup} Every sequence holds {context} tokens of KV. At "
    "what batch does decode turn compute-bound?",
    "q.cost": "{setup} A GPU-hour costs ${usd}; at batch {batch} it serves {rate} tok/s "
    "in total. What does a million output tokens cost?",
    "q.amdahl": "Non-overlapping optimisations of a decode step: {parts_en}. What is "
    "the overall speedup?",
    "d.ceiling": "floor = bytes per step / bandwidth = {bytes} / {group_bw} = {step}; "
    "ceiling = 1 / {step} = {rate} tok/s per user.",
    "d.claim": "ceiling = 1 / ({weights} / {group_bw}) = 1 / {step} = {rate} tok/s per user.",
    "d.mbu": "achieved bandwidth = {weights} / {measured} = {achieved}; MBU = "
    "{achieved} / {group_bw} = {mbu} % (= floor {step} / measured {measured}).",
    "d.gpu-util": "achieved bandwidth = {weights} / {measured} = {achieved}; MBU = "
    "{achieved} / {group_bw} = {mbu} %; MFU {mfu} %. GPU-util only says a kernel was "
    "running; the fix is more users per GPU (batching), not more GPUs.",
    "d.batching": "step = ({weights} + {batch} x {context} x {kv_token} = {kv_total} "
    "of KV) / {group_bw} = {step} (alone: {step1}); each user 1 / {step} = {per_user} "
    "tok/s ({slowdown}x slower); total {batch} / {step} = {total} tok/s ({speedup}x "
    "batch 1, not {batch}x).",
    "d.max-batch": "max batch = ({group_mem} - {weights}) / ({context} x {kv_token} = "
    "{kv_seq}) = {max_batch}.",
    "d.prefill.time": "prefill FLOPs = 2 x {params} x {prompt} = {prefill_flops}; / "
    "{group_flops} = {prefill} ({bound}-bound), only {stall}x a decode step ({step}): "
    "the weights are read once for the whole prompt.",
    "d.prefill.stall": "prefill FLOPs = 2 x {params} x {prompt} = {prefill_flops}; / "
    "{group_flops} = {prefill} ({bound}-bound); a decode step is {step}, so each "
    "stream stalls {prefill} / {step} = {stall} steps. Chunked prefill bounds the stall.",
    "d.ridge": "ridge = peak FLOPS / bandwidth = {group_flops} / {group_bw} = {ridge} "
    "FLOP/B: below it memory-bound, above it compute-bound.",
    "d.crossover.without_kv": "intensity = batch x 2 FLOP per {bytes_per_param} B of "
    "weights; it meets the ridge ({ridge} FLOP/B) at batch {batch}. With long contexts "
    "it comes much later: the batch shares the weights, not the KV.",
    "d.crossover.with_kv": "intensity = batch x 2 FLOP per {bytes_per_param} B of "
    "weights; it meets the ridge ({ridge} FLOP/B) near batch {batch0} without KV. KV "
    "bytes ({kv_seq} per sequence) are not shared, so at {context} tokens: batch {batch}.",
    "d.cost": "tokens/hour = {rate} x 3,600 = {per_hour}; $ per million = ${usd} x "
    "{tp} / {per_hour} x 10^6 = ${price}.",
    "d.amdahl": "new time = {untouched} + {terms} = {new_time}; speedup = 1 / "
    "{new_time} = {speedup}x (ceiling {ceiling}x if those parts took no time).",
    "m.one-gpu-bandwidth": "one GPU's bandwidth under tensor parallelism: the {tp} "
    "GPUs' bandwidths add.",
    "m.flops-not-bandwidth": "the ceiling taken from TFLOPS: decode is bound by memory "
    "bandwidth (bytes / bandwidth).",
    "m.kv-forgotten": "the KV cache forgotten: each step also reads this sequence's KV.",
    "m.claim-taken": "the benchmark taken at its word: check it against the ceiling.",
    "m.measured-over-floor": "measured divided by floor: MBU = floor / measured.",
    "m.gpu-util-as-usage": "GPU-util read as usage: it only says some kernel was running.",
    "m.power-as-usage": "the power draw read as usage: decode waits on memory, the "
    "tensor cores idle.",
    "m.one-users-kv": "one user's KV added instead of all {batch}: the batch size must "
    "appear in the bytes.",
    "m.n-times-slower": "{batch} users taken as {batch}x slower: the weights are read "
    "once for the whole batch.",
    "m.n-times-faster": "the total taken as {batch}x batch 1: the step grows with the KV.",
    "m.total-not-per-user": "the total given for one user: each user gets 1 token per step.",
    "m.per-user-not-total": "one user's rate given for the total: the step makes {batch} tokens.",
    "m.weights-forgotten": "the weights forgotten: they take {weights} first.",
    "m.one-gpu-memory": "one GPU's memory: under TP the {tp} GPUs' memories add.",
    "m.bytes-over-flops": "bytes divided by FLOPS, which is not a time: FLOPs / FLOPS, "
    "bytes / bandwidth.",
    "m.prefill-as-decode-step": "the prefill taken as one decode step: its cost grows "
    "with the prompt.",
    "m.inverted": "the ratio inverted: ridge = FLOPS / bandwidth.",
    "m.thousand-off": "a factor of 1000 slipped (TB vs GB, TFLOPS vs GFLOPS).",
    "m.kv-shared": "KV bytes taken as shared: the batch shares the weights, not the KV.",
    "m.ridge-as-batch": "the ridge taken as the batch: at {dtype} a parameter is "
    "{bytes_per_param} B, so intensity = 2 x batch / {bytes_per_param}.",
    "m.one-flop-per-parameter": "one FLOP per parameter: a token costs 2 (multiply and add).",
    "m.divided-not-multiplied": "the price divided by the hours instead of multiplied.",
    "m.seconds-for-hours": "tokens per second taken as per hour: x 3,600.",
    "m.power-of-ten": "a power of ten slipped (10^6 / 200 is 5,000 s, not 500).",
    "m.one-gpu-priced": "one GPU priced: {tp} GPUs produce that rate.",
    "m.part-speedup-as-whole": "the part's speedup taken for the whole step: the "
    "untouched {untouched} stays.",
    "m.speedups-multiplied": "speedups multiplied: add the new times instead.",
    "m.speedups-added": "speedups added: add the new times instead.",
    "v.claim-possible": "{claimed} tok/s is within the ceiling.",
    "v.claim-impossible": "{claimed} tok/s is above the ceiling: impossible. Usual "
    "causes: no synchronize before stopping the clock; prompt tokens counted as output.",
    "v.healthy": "MBU of 60 % or more: healthy.",
    "v.room-left": "MBU below 60 %: room left (launch overhead, small kernels).",
    "ui.card": "Card {i}/{n} · {kind}",
    "ui.timer": "Answer aloud within a minute (by {deadline}), then type the number "
    "and its unit ({unit}); q stops.",
    "ui.prompt": "answer> ",
    "ui.reask": "Could not read {text!r} as a number; write it like {forms}. Once more:",
    "ui.unread": "no number read: counted as wrong.",
    "ui.graded": "{grade}: you said {given}, expected {expected} ({off} off), {secs} s",
    "ui.over": " (over the minute)",
    "ui.one": "{grade}: you said {given}, expected {expected}",
    "ui.right": "RIGHT",
    "ui.close": "CLOSE",
    "ui.wrong": "WRONG",
    "ui.mistake": "Usual mistake, yours: {text}",
    "ui.usual": "Usual mistake here: {text}",
    "ui.key": "Key: {text}",
    "ui.explain": "Derivation (inferlab {verb} --explain):",
    "ui.check": "Check it: inferlab {argv}",
    "ui.score": "Score: {right} right, {close} close, {wrong} wrong of {n}.",
    "ui.saved": "History: {path}",
    "ui.next": "Enter for the next card, q to stop> ",
}

_VI = {
    "setup.1": "{model} ở {dtype} ({weights} trọng số, {kv_token} KV cache mỗi token) "
    "trên một {hw} ({bw}, {flops}, {mem}).",
    "setup.n": "{model} ở {dtype} ({weights} trọng số, {kv_token} KV cache mỗi token) "
    "trên {tp} x {hw} dùng tensor parallelism ({bw}, {flops}, {mem} mỗi GPU).",
    "q.ceiling": "{setup} Một người dùng, context {context} token. Mức sàn decode mỗi "
    "token là bao nhiêu, và vậy trần mỗi người dùng là bao nhiêu?",
    "q.claim": "{setup} Một người dùng. Benchmark của một đồng nghiệp báo {claimed} "
    "token/s mỗi người. Trần mỗi người là bao nhiêu, và con số đó có thể đúng không?",
    "q.mbu": "{setup} Một người dùng; thời gian bước decode đo được (TPOT) là "
    "{measured}. MBU là bao nhiêu?",
    "q.gpu-util": "{setup} Một người dùng chat. Dashboard hiện GPU-util 100 %, công "
    "suất {power} % mức trần và {measured} mỗi token decode. Quản lý muốn thêm GPU. "
    "Thực sự dùng bao nhiêu phần băng thông bộ nhớ (MBU)?",
    "q.batching.per_user": "{setup} {batch} người dùng decode cùng nhau, mỗi người giữ "
    "{context} token KV. Mỗi người nhận được bao nhiêu token/s?",
    "q.batching.total": "{setup} {batch} người dùng decode cùng nhau, mỗi người giữ "
    "{context} token KV. Tổng throughput là bao nhiêu token/s?",
    "q.max-batch": "{setup} Mỗi chuỗi giữ {context} token. Bao nhiêu chuỗi vừa trong "
    "bộ nhớ bên cạnh trọng số?",
    "q.prefill.time": "{setup} Prefill một prompt {prompt} token mất bao lâu?",
    "q.prefill.stall": "{setup} {streams} người dùng đang stream thì có người dán vào "
    "một tài liệu {prompt} token. Mỗi luồng đứng hình bao nhiêu bước decode?",
    "q.ridge": "{setup} Điểm gãy (ridge point) là bao nhiêu FLOP mỗi byte?",
    "q.crossover.without_kv": "{setup} Context ngắn, coi như không có KV. Ở batch nào "
    "decode chuyển sang compute-bound?",
    "q.crossover.with_kv": "{setup} Mỗi chuỗi giữ {context} token KV. Ở batch nào "
    "decode chuyển sang compute-bound?",
    "q.cost": "{setup} Một giờ GPU giá ${usd}; ở batch {batch} nó phục vụ tổng cộng "
    "{rate} token/s. Một triệu token đầu ra tốn bao nhiêu?",
    "q.amdahl": "Các tối ưu không chồng lấp của một bước decode: {parts_vi}. Speedup "
    "tổng là bao nhiêu?",
    "d.ceiling": "mức sàn = byte mỗi bước ÷ băng thông = {bytes} ÷ {group_bw} = {step}; "
    "trần = 1 ÷ {step} = {rate} token/s mỗi người.",
    "d.claim": "trần = 1 ÷ ({weights} ÷ {group_bw}) = 1 ÷ {step} = {rate} token/s mỗi người.",
    "d.mbu": "băng thông đạt được = {weights} ÷ {measured} = {achieved}; MBU = "
    "{achieved} ÷ {group_bw} = {mbu} % (= mức sàn {step} ÷ số đo {measured}).",
    "d.gpu-util": "băng thông đạt được = {weights} ÷ {measured} = {achieved}; MBU = "
    "{achieved} ÷ {group_bw} = {mbu} %; MFU {mfu} %. GPU-util chỉ nói có kernel đang "
    "chạy; cách sửa là nhiều người dùng hơn mỗi GPU (batching), không phải thêm GPU.",
    "d.batching": "bước = ({weights} + {batch} x {context} x {kv_token} = {kv_total} "
    "KV) ÷ {group_bw} = {step} (một mình: {step1}); mỗi người 1 ÷ {step} = {per_user} "
    "token/s (chậm hơn {slowdown} lần); tổng {batch} ÷ {step} = {total} token/s "
    "({speedup} lần batch 1, không phải {batch} lần).",
    "d.max-batch": "batch tối đa = ({group_mem} - {weights}) ÷ ({context} x {kv_token} "
    "= {kv_seq}) = {max_batch}.",
    "d.prefill.time": "FLOP prefill = 2 x {params} x {prompt} = {prefill_flops}; ÷ "
    "{group_flops} = {prefill} ({bound}-bound), chỉ gấp {stall} lần một bước decode "
    "({step}): trọng số chỉ đọc một lần cho cả prompt.",
    "d.prefill.stall": "FLOP prefill = 2 x {params} x {prompt} = {prefill_flops}; ÷ "
    "{group_flops} = {prefill} ({bound}-bound); một bước decode là {step}, nên mỗi luồng "
    "đứng hình {prefill} ÷ {step} = {stall} bước. Chunked prefill chặn được việc này.",
    "d.ridge": "điểm gãy = FLOPS đỉnh ÷ băng thông = {group_flops} ÷ {group_bw} = "
    "{ridge} FLOP/B: dưới mức đó memory-bound, trên mức đó compute-bound.",
    "d.crossover.without_kv": "intensity = batch x 2 FLOP cho {bytes_per_param} B trọng "
    "số; gặp điểm gãy ({ridge} FLOP/B) ở batch {batch}. Với context dài thì muộn hơn "
    "nhiều: batch chia chung trọng số, không chia KV.",
    "d.crossover.with_kv": "intensity = batch x 2 FLOP cho {bytes_per_param} B trọng "
    "số; gặp điểm gãy ({ridge} FLOP/B) ở batch khoảng {batch0} khi không có KV. Byte KV "
    "({kv_seq} mỗi chuỗi) không được chia chung, nên ở {context} token: batch {batch}.",
    "d.cost": "token mỗi giờ = {rate} x 3.600 = {per_hour}; chi phí mỗi triệu = ${usd} "
    "x {tp} ÷ {per_hour} x 10^6 = ${price}.",
    "d.amdahl": "thời gian mới = {untouched} + {terms} = {new_time}; speedup = 1 ÷ "
    "{new_time} = {speedup} lần (trần {ceiling} lần nếu các phần đó không tốn thời gian).",
    "m.one-gpu-bandwidth": "dùng băng thông của một GPU dưới tensor parallelism: băng "
    "thông của {tp} GPU cộng lại.",
    "m.flops-not-bandwidth": "lấy trần từ TFLOPS: decode bị giới hạn bởi băng thông bộ "
    "nhớ (byte ÷ băng thông).",
    "m.kv-forgotten": "quên KV cache: mỗi bước còn đọc KV của chuỗi này.",
    "m.claim-taken": "tin luôn benchmark: hãy so nó với trần trước.",
    "m.measured-over-floor": "chia số đo cho mức sàn: MBU = mức sàn ÷ số đo.",
    "m.gpu-util-as-usage": "đọc GPU-util như mức dùng: nó chỉ nói có kernel nào đó đang chạy.",
    "m.power-as-usage": "đọc công suất như mức dùng: decode chờ bộ nhớ, tensor core ngồi không.",
    "m.one-users-kv": "cộng KV của một người thay vì của {batch} người: con số {batch} "
    "phải xuất hiện trong tổng số byte.",
    "m.n-times-slower": "cho rằng {batch} người dùng chậm hơn {batch} lần: trọng số chỉ "
    "đọc một lần cho cả batch.",
    "m.n-times-faster": "cho rằng tổng gấp {batch} lần batch 1: bước dài thêm vì KV.",
    "m.total-not-per-user": "đưa tổng làm tốc độ một người: mỗi người nhận 1 token mỗi bước.",
    "m.per-user-not-total": "đưa tốc độ một người làm tổng: mỗi bước sinh {batch} token.",
    "m.weights-forgotten": "quên trọng số: chúng chiếm {weights} trước.",
    "m.one-gpu-memory": "dùng bộ nhớ của một GPU: dưới TP bộ nhớ của {tp} GPU cộng lại.",
    "m.bytes-over-flops": "chia byte cho FLOPS, đó không phải thời gian: FLOP ÷ FLOPS, "
    "byte ÷ băng thông.",
    "m.prefill-as-decode-step": "coi prefill như một bước decode: chi phí của nó tăng "
    "theo độ dài prompt.",
    "m.inverted": "đảo ngược tỷ số: điểm gãy = FLOPS ÷ băng thông.",
    "m.thousand-off": "trượt một hệ số 1000 (TB và GB, TFLOPS và GFLOPS).",
    "m.kv-shared": "coi byte KV như được chia chung: batch chỉ chia chung trọng số, không chia KV.",
    "m.ridge-as-batch": "lấy điểm gãy làm batch: ở {dtype} mỗi tham số là "
    "{bytes_per_param} B, nên intensity = 2 x batch ÷ {bytes_per_param}.",
    "m.one-flop-per-parameter": "một FLOP mỗi tham số: mỗi token tốn 2 (nhân và cộng).",
    "m.divided-not-multiplied": "chia tiền cho giờ thay vì nhân.",
    "m.seconds-for-hours": "lấy token mỗi giây làm token mỗi giờ: phải x 3.600.",
    "m.power-of-ten": "trượt một bậc mười (10^6 ÷ 200 là 5.000 s, không phải 500).",
    "m.one-gpu-priced": "chỉ tính tiền một GPU: {tp} GPU cùng tạo ra tốc độ đó.",
    "m.part-speedup-as-whole": "lấy speedup của một phần làm speedup cả bước: phần "
    "{untouched} không đụng tới vẫn còn.",
    "m.speedups-multiplied": "nhân các speedup: hãy cộng các thời gian mới.",
    "m.speedups-added": "cộng các speedup: hãy cộng các thời gian mới.",
    "v.claim-possible": "{claimed} token/s nằm dưới trần.",
    "v.claim-impossible": "{claimed} token/s vượt trần: không thể. Lỗi thường gặp: không "
    "synchronize trước khi dừng đồng hồ; đếm token prompt như token đầu ra.",
    "v.healthy": "MBU từ 60 % trở lên: khoẻ.",
    "v.room-left": "MBU dưới 60 %: còn dư địa (overhead launch, kernel nhỏ).",
    "ui.card": "Thẻ {i}/{n} · {kind}",
    "ui.timer": "Trả lời thành tiếng trong một phút (trước {deadline}), rồi gõ con số kèm "
    "đơn vị ({unit}); q để dừng.",
    "ui.prompt": "trả lời> ",
    "ui.reask": "Không đọc được {text!r} thành con số; hãy viết như {forms}. Thử lại một lần:",
    "ui.unread": "không đọc được con số: tính là sai.",
    "ui.graded": "{grade}: bạn nói {given}, đáp án {expected} (lệch {off}), {secs} s",
    "ui.over": " (quá một phút)",
    "ui.one": "{grade}: bạn nói {given}, đáp án {expected}",
    "ui.right": "ĐÚNG",
    "ui.close": "GẦN ĐÚNG",
    "ui.wrong": "SAI",
    "ui.mistake": "Lỗi thường gặp, của bạn: {text}",
    "ui.usual": "Lỗi thường gặp ở thẻ này: {text}",
    "ui.key": "Mấu chốt: {text}",
    "ui.explain": "Cách tính (inferlab {verb} --explain):",
    "ui.check": "Tự kiểm tra: inferlab {argv}",
    "ui.score": "Điểm: {right} đúng, {close} gần đúng, {wrong} sai trên {n}.",
    "ui.saved": "Lịch sử: {path}",
    "ui.next": "Enter để sang thẻ tiếp, q để dừng> ",
}

_TABLES = {"en": _EN, "vi": _VI}


def check_lang(lang: str) -> str:
    if lang not in _TABLES:
        raise InferlabError(f"--lang {lang!r}: choose one of {', '.join(LANGS)}")
    return lang


def say(lang: str, key: str, **numbers: object) -> str:
    return _TABLES[lang][key].format(**numbers)


def _fill(card: Card, lang: str, key: str) -> str:
    n = dict(card.numbers)
    if "model" in n:
        n["setup"] = say(lang, "setup.1" if n["tp"] == "1" else "setup.n", **n)
    return say(lang, key, **n)


def question(card: Card, lang: str) -> str:
    key = f"q.{card.kind}" + (f".{card.inputs.target}" if card.inputs.target else "")
    return _fill(card, lang, key)


def derivation(card: Card, lang: str) -> str:
    key = f"d.{card.kind}.{card.inputs.target}"
    return _fill(card, lang, key if key in _TABLES[lang] else f"d.{card.kind}")


def mistake(card: Card, name: str, lang: str) -> str:
    return _fill(card, lang, f"m.{name}")


def verdict(card: Card, lang: str) -> str | None:
    return _fill(card, lang, f"v.{card.verdict}") if card.verdict else None
