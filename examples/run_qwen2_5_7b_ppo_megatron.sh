#!/usr/bin/env bash
# PPO | Qwen2.5-7B-Instruct | Megatron (TP 4 x PP 2) | GSM8K | 2 nodes x 8 GPUs
set -xeuo pipefail

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-7B-Instruct}
DATA_DIR=${DATA_DIR:-/data/gsm8k}
NNODES=2
GPUS_PER_NODE=8
TP=4
PP=2
CP=4

python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \
    algorithm.adv_estimator=gae \
    data.train_files="${DATA_DIR}/train.parquet" \
    data.val_files="${DATA_DIR}/test.parquet" \
    data.train_batch_size=512 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path="${MODEL_PATH}" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${TP} \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${PP} \
    actor_rollout_ref.actor.megatron.context_parallel_size=${CP} \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.grad_offload=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    critic.optim.lr=1e-5 \
    critic.model.path="${MODEL_PATH}" \
    critic.ppo_micro_batch_size_per_gpu=4 \
    critic.megatron.tensor_model_parallel_size=${TP} \
    critic.megatron.pipeline_model_parallel_size=${PP} \
    trainer.logger='["console"]' \
    trainer.project_name=verl_ppo_gsm8k \
    trainer.experiment_name=qwen2_5_7b_ppo_megatron \
    trainer.n_gpus_per_node=${GPUS_PER_NODE} \
    trainer.nnodes=${NNODES} \
    trainer.total_epochs=10
