#!/usr/bin/env bash
# GRPO | Qwen3-8B | FSDP | GSM8K | NVIDIA GPUs or Ascend NPUs
# (DEVICE is auto-detected from torch_npu; export DEVICE=gpu|npu to override.)
set -xeuo pipefail

DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-8B}
DATA_DIR=${DATA_DIR:-/data/gsm8k}
NNODES=${NNODES:-1}

train_batch_size=256
ppo_mini_batch_size=64
max_prompt_length=1024
max_response_length=2048

case "${DEVICE}" in
    gpu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        rollout_tp=2
        ;;
    npu)
        export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
        rollout_tp=4
        ;;
    *)
        echo "DEVICE must be gpu or npu, got: ${DEVICE}" >&2
        exit 1
        ;;
esac

DATA=(
    data.train_files="${DATA_DIR}/train.parquet"
    data.val_files="${DATA_DIR}/test.parquet"
    data.train_batch_size=${train_batch_size}
    data.max_prompt_length=${max_prompt_length}
    data.max_response_length=${max_response_length}
)

ACTOR=(
    actor_rollout_ref.model.path="${MODEL_PATH}"
    actor_rollout_ref.actor.optim.learning_rate=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=${ppo_mini_batch_size}
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
)

ROLLOUT=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=${rollout_tp}
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    +actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16
)

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    "${DATA[@]}" \
    "${ACTOR[@]}" \
    "${ROLLOUT[@]}" \
    trainer.logger='["console","wandb"]' \
    trainer.project_name=verl_grpo_gsm8k \
    trainer.experiment_name=qwen3_8b_grpo_fsdp \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=${NNODES} \
    trainer.total_epochs=15 "$@"
