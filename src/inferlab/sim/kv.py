"""The KV-cache block manager: capacity and use counted in fixed-size blocks of tokens."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.errors import InferlabError


@dataclass(slots=True)
class KVBlockManager:
    block_tokens: int
    capacity_blocks: int | None  # None: unlimited
    used_blocks: int = 0

    @classmethod
    def for_tokens(cls, capacity_tokens: int | None, block_tokens: int) -> KVBlockManager:
        cap = None if capacity_tokens is None else capacity_tokens // block_tokens
        return cls(block_tokens, cap)

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_tokens)

    def fits(self, blocks: int) -> bool:
        """Whether `blocks` more fit beside what is used now."""
        return self.capacity_blocks is None or self.used_blocks + blocks <= self.capacity_blocks

    def check_can_ever_hold(self, tokens: int, request_tokens: int) -> None:
        """Refuse a request that would not fit even in an empty cache (it would wait forever)."""
        cap = self.capacity_blocks
        if cap is not None and self.blocks_for(tokens) > cap:
            raise InferlabError(
                f"the KV cache ({cap * self.block_tokens} tokens) cannot hold "
                f"even one request of {request_tokens} tokens"
            )
