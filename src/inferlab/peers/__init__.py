"""Other tools' benchmark results (vLLM, AIPerf, guidellm, SGLang, llama.cpp), read by
their content into inferlab's RunSummary and judged against the floor (peers/judge.py)."""
