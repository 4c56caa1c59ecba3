"""The data-parallel size of a training role (actor, critic, ref), as verl's workers compute it.

Shared by VL303 (batch divisibility) and VL305 (token budgets read the sequence-parallel size).
"""

from __future__ import annotations

from typing import NamedTuple

from verl_lint.rules.arithmetic._operands import (
    ACTOR, FSDP_STRATEGIES, REF, Operand, Skip, World, get_int, get_str, product, where, world,
)
from verl_lint.verl.effective import EffectiveConfig

# Sequence-parallel keys per role, oldest first. `<role>.ulysses_sequence_parallel_size` is the
# legacy workers' key (deprecated from 0.6.0); the engine workers read the engine config's copy.
SP_KEYS = {
    ACTOR: (f"{ACTOR}.ulysses_sequence_parallel_size",
            f"{ACTOR}.fsdp_config.ulysses_sequence_parallel_size"),
    REF: (f"{REF}.ulysses_sequence_parallel_size",
          f"{REF}.fsdp_config.ulysses_sequence_parallel_size"),
    "critic": ("critic.ulysses_sequence_parallel_size",
               "critic.model.fsdp_config.ulysses_sequence_parallel_size",
               "critic.fsdp.ulysses_sequence_parallel_size"),
}


def sp_operands(config: EffectiveConfig, section: str) -> list[Operand]:
    """Every Ulysses size this release has for the role (Skip when one is unknown)."""
    return [get_int(config, key) for key in SP_KEYS[section] if config.get(key) is not None]


def engine_sp(config: EffectiveConfig, section: str, *, legacy: bool) -> Operand:
    """The Ulysses size the role's worker uses. Legacy workers read the role key; the engine
    workers read the engine copy, and the deprecated role key is migrated into it. Two
    different sizes above 1 are ambiguous: verl-lint does not guess which one wins."""
    ops = sp_operands(config, section)
    if not ops:
        return Operand(f"{section}.ulysses_sequence_parallel_size", 1)
    if legacy:
        return ops[0]
    parallel = [op for op in ops if op.value != 1]
    if len({op.value for op in parallel}) > 1:
        raise Skip("ambiguous sequence parallel size")
    return parallel[0] if parallel else ops[-1]


class DataParallel(NamedTuple):  # cheaper to import than a frozen dataclass
    size: int
    world: World
    divisors: tuple[Operand, ...]  # TP, PP, CP (megatron) or the Ulysses size (fsdp)
    names: str

    @property
    def operands(self) -> tuple[Operand, ...]:
        return (*self.world.operands, *self.divisors)

    def text(self) -> str:
        """`16 (world size 64 / TP×PP×CP 2×2×1: trainer.nnodes 4 × trainer.n_gpus_per_node 16,
        line 88; TP×PP×CP lines 61-63)`."""
        w = self.world
        if product(self.divisors) == 1:
            return f"{self.size} (world size {w.size}: {w.detail()})"
        values = "×".join(str(op.value) for op in self.divisors)
        return (f"{self.size} (world size {w.size} / {self.names} {values}: {w.detail()}; "
                f"{self.names} {where(self.divisors)})")


def data_parallel(config: EffectiveConfig, section: str, *, legacy: bool) -> DataParallel:
    """Skip for strategies whose data-parallel size verl-lint does not model, and when the
    parallel sizes do not divide the world (VL301's finding, not a batch-size one)."""
    w = world(config)
    kind = get_str(config, f"{section}.strategy").value
    if kind == "megatron":
        meg = f"{section}.megatron"
        divisors = tuple(get_int(config, f"{meg}.{name}_parallel_size")
                         for name in ("tensor_model", "pipeline_model", "context"))
        names = "TP×PP×CP"
    elif kind in FSDP_STRATEGIES:
        divisors = (engine_sp(config, section, legacy=legacy),)
        names = "Ulysses SP"
    else:
        raise Skip(kind)
    mp = product(divisors)
    if mp <= 0 or w.size % mp != 0:
        raise Skip("parallel sizes do not divide the world")
    return DataParallel(w.size // mp, w, divisors, names)
