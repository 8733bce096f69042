"""inferlab: the physics of LLM inference speed."""

__version__ = "0.1.0"
