#!/usr/bin/env bash
# SFT | Qwen3-4B | FSDP | GSM8K, single node, 8 GPUs
set -xeuo pipefail

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-4B}
DATA_DIR=${DATA_DIR:-/data/gsm8k}
SAVE_DIR=${SAVE_DIR:-/checkpoints/qwen3_4b_sft}

torchrun --standalone --nnodes=1 --nproc_per_node=8 \
    -m verl.trainer.sft_trainer \
    data.train_files="${DATA_DIR}/train.parquet" \
    data.val_files="${DATA_DIR}/test.parquet" \
    data.messages_key=messages \
    data.micro_batch_size_per_gpu=4 \
    model.path="${MODEL_PATH}" \
    optim.lr=1e-5 \
    trainer.default_local_dir="${SAVE_DIR}" \
    trainer.project_name=verl_sft_gsm8k \
    trainer.experiment_name=qwen3_4b_sft \
    trainer.logger='["console"]' \
    trainer.total_epochs=2 "$@"
