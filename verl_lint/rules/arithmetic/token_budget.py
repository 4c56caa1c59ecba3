"""VL305 token-budget-too-small."""

from __future__ import annotations

from typing import Iterable

from verl_lint.diagnostics import Diagnostic, Severity
from verl_lint.rules.arithmetic._data_parallel import sp_operands
from verl_lint.rules.arithmetic._operands import (
    builds_workers, config_of,
    ACTOR, FSDP_STRATEGIES, REF, ROLLOUT, Operand, Skip, collect, critic_in_use, get_bool,
    get_int, get_str, literal_fix, place, ref_in_use, where,
)
from verl_lint.rules.base import LaunchContext, Rule
from verl_lint.rules.registry import register
from verl_lint.verl.effective import EffectiveConfig
from verl_lint.verl.versions import in_range

# Mirrors (constraints.json) dynbsz_token_budget (>=0.4.0; verl/utils/seqlen_balancing.py:
# 384-386, "max_token_len must be greater than the sequence length"): with dynamic batch size every
# micro batch holds at most `<budget> × sp` tokens, so the longest sequence must fit. The longest
# sequence is data-dependent, bounded by max_prompt_length + max_response_length (and by the
# rollout's max_model_len, past which nothing is generated): a warning.
ALL = ">=0.4.0"
# (who, section whose parallel sizes scale the budget, dynamic-bsz key, budget keys)
PASSES = (
    ("actor update", ACTOR, f"{ACTOR}.use_dynamic_bsz", (f"{ACTOR}.ppo_max_token_len_per_gpu",)),
    ("actor log-prob", ACTOR, f"{ROLLOUT}.log_prob_use_dynamic_bsz",
     (f"{ROLLOUT}.log_prob_max_token_len_per_gpu",)),
    ("reference log-prob", REF, f"{REF}.log_prob_use_dynamic_bsz",
     (f"{REF}.log_prob_max_token_len_per_gpu",)),
    ("critic", "critic", "critic.use_dynamic_bsz",
     ("critic.ppo_max_token_len_per_gpu", "critic.forward_max_token_len_per_gpu")),
)


def _sequence_parallel(config: EffectiveConfig, section: str) -> Operand:
    """The factor verl multiplies the per-GPU budget by: the Ulysses size (FSDP) or the context
    parallel size (Megatron). Where several keys could apply, the largest: never under-count."""
    kind = get_str(config, f"{section}.strategy").value
    if kind == "megatron":
        ops = [get_int(config, f"{section}.megatron.context_parallel_size")]
    elif kind in FSDP_STRATEGIES:
        ops = sp_operands(config, section)
    else:
        raise Skip(kind)  # other engines have their own sequence-parallel settings
    if not ops:
        return Operand(f"{section}.ulysses_sequence_parallel_size", 1)
    return max(ops, key=lambda op: op.value)


@register
class TokenBudgetTooSmall(Rule):
    """A dynamic-batch token budget that one full-length sequence does not fit in.

    ## What it does
    With `use_dynamic_bsz=True`, verl packs micro batches up to a token budget per device:
    `ppo_max_token_len_per_gpu` (actor update, critic), `log_prob_max_token_len_per_gpu`
    (rollout and reference log-prob passes), `forward_max_token_len_per_gpu` (critic values),
    each multiplied by the sequence-parallel size. This rule warns when a budget is below
    `data.max_prompt_length + data.max_response_length`, the length a single sample can reach
    (or `actor_rollout_ref.rollout.max_model_len` when that is smaller: the rollout engine
    generates nothing past it).

    ## Why is this bad?
    verl asserts `max_token_len must be greater than the sequence length` when it builds the
    micro batches: the first batch with a long enough response crashes the run, possibly hours
    in. It is a warning because the actual longest sequence depends on the data.

    Where it applies: the training entry points (they build the actor, ref and critic that pack
    micro batches by tokens), every release from 0.4.0; not `main_generation_server`.

    ## Example
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        data.max_prompt_length=2048 \
        data.max_response_length=8192 \
        actor_rollout_ref.actor.use_dynamic_bsz=True \
        actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192
    ```

    ## Use instead
    ```bash
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        actor_rollout_ref.rollout.name=vllm \
        data.max_prompt_length=2048 \
        data.max_response_length=8192 \
        actor_rollout_ref.actor.use_dynamic_bsz=True \
        actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384
    ```

    ## Fix safety
    Unsafe: raising the token budget changes how many tokens a micro batch packs, and so
    memory use and speed.

    ## References
    - verl `verl/utils/seqlen_balancing.py` (`rearrange_micro_batches`)
    - verl docs, "Performance tuning guide": dynamic batch size and `ppo_max_token_len_per_gpu`
    """

    code = "VL305"
    name = "token-budget-too-small"
    severity = Severity.WARNING
    summary = "dynamic-batch token budget below max_prompt_length + max_response_length"
    scope = "launch"
    fixable = True

    def check(self, ctx: LaunchContext) -> Iterable[Diagnostic]:
        config = config_of(ctx)
        if config is None or not in_range(config.version, ALL) or not builds_workers(ctx):
            return
        seen: set[tuple] = set()
        for who, section, dynamic_key, budget_keys in PASSES:
            for budget_key in budget_keys:
                yield from collect([
                    lambda: self._check(ctx, who, section, dynamic_key, budget_key, seen)])

    def _check(self, ctx: LaunchContext, who: str, section: str, dynamic_key: str,
               budget_key: str, seen: set) -> Diagnostic | None:
        config = config_of(ctx)
        if section == REF and not ref_in_use(config):
            return None
        if section == "critic" and not critic_in_use(config):
            return None
        if not get_bool(config, dynamic_key).value:
            return None
        budget = get_int(config, budget_key)
        sp = _sequence_parallel(config, section)
        prompt = get_int(config, "data.max_prompt_length")
        response = get_int(config, "data.max_response_length")
        if budget.value <= 0 or sp.value <= 0:
            raise Skip(budget_key)
        tokens = budget.value * sp.value
        longest = prompt.value + response.value
        # the rollout engine never generates past max_model_len: no sequence is longer
        cap = get_int(config, f"{ROLLOUT}.max_model_len", absent=0, nullable=True)
        if cap.value and 0 < cap.value < longest:
            longest = cap.value
        if tokens >= longest:
            return None
        # A budget inherited from another (log-prob from the actor's) is reported once.
        root = budget.resolved.origin.from_key if budget.is_inherited else None
        signature = (root or budget.key, tokens)
        if signature in seen:
            return None
        seen.add((budget.key, tokens))
        span, labels = place(ctx.launch.span, [budget], [sp, prompt, response])
        scaled = f" × SP {sp.value} = {tokens}" if sp.value != 1 else ""
        needed = -(-longest // sp.value)
        return self.diagnostic(
            span,
            f"{who} token budget {budget.show()}{scaled} "
            f"({where([budget, sp] if sp.value != 1 else [budget])}) is smaller "
            f"than {prompt.show()} + {response.show()} = {prompt.value + response.value} "
            f"({where([prompt, response])})"
            + (f", capped by {cap.show()} ({where([cap])})" if longest == cap.value else "")
            + ": with dynamic batch size one sequence that long does not fit in a micro batch",
            labels=labels,
            help=f"raise {budget_key} to at least {needed}",
            fix=literal_fix(ctx, budget, needed, f"raise {budget_key} to {needed}"))
