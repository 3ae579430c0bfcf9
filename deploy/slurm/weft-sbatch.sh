#!/bin/bash
# weft-sbatch.sh: an sbatch script that lets Weft place a job's ranks inside the job's
# allocation, then starts one task per GPU with srun in Weft's rank order, each task
# with its node's NCCL environment. See README.md.
#
#   sbatch --nodes=4 --gpus-per-node=8 --exclusive deploy/slurm/weft-sbatch.sh \
#       python train.py --config cfg.yaml
#
# Environment (all optional):
#   WEFT_CONTROLLER   controller HOST:PORT (default: weftctl's, 127.0.0.1:7400)
#   WEFT_WEFTCTL      the weftctl binary (default: weftctl on PATH)
#   WEFT_NODES        nodes to place on (default: all of the allocation, SLURM_JOB_NUM_NODES)
#   WEFT_GPUS_PER_NODE  ranks per node (default: SLURM_GPUS_ON_NODE, else every GPU)
#   WEFT_PLACE_ARGS   more `weftctl place` flags, split on spaces, e.g.
#                     "--tp 8 --pp 4 --gradient-bytes 2000000000 --qos training"
#   WEFT_LEASE_S      reservation lease, renewed every third of it (default 1800)
#SBATCH --job-name=weft-job
#SBATCH --exclusive
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "weft-sbatch.sh: give the program to run, e.g. sbatch weft-sbatch.sh python train.py" >&2
  exit 2
fi

weftctl=("${WEFT_WEFTCTL:-weftctl}")
if [ -n "${WEFT_CONTROLLER:-}" ]; then weftctl+=(--controller "$WEFT_CONTROLLER"); fi
job="${SLURM_JOB_ID:?not inside a Slurm job}"
lease_s="${WEFT_LEASE_S:-1800}"
nodes="${WEFT_NODES:-$SLURM_JOB_NUM_NODES}"
# The allocation, one node name per line -> "a,b,c". Weft node names must be the Slurm
# NodeNames (both are normally the short hostname).
within="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)"
workdir="$(mktemp -d "${TMPDIR:-/tmp}/weft-${job}.XXXXXX")"

renewer=""
cleanup() {
  status=$?
  if [ -n "$renewer" ]; then kill "$renewer" 2>/dev/null || true; fi
  # Ends the reservation at once; if this never runs (the script was SIGKILLed), the
  # lease runs out within WEFT_LEASE_S.
  "${weftctl[@]}" release --job "$job" >/dev/null || true
  rm -rf "$workdir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM  # scancel, time limit: run the EXIT trap
trap 'exit 130' INT

# One placement; asking again for the same job returns the same reservation, so the
# three formats below describe the same nodes and rank order.
gpus_per_node="${WEFT_GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-0}}"
# shellcheck disable=SC2206  # WEFT_PLACE_ARGS is a list of flags, split on purpose
place=("${weftctl[@]}" place --job "$job" --nodes "$nodes" --within "$within"
       --gpus-per-node "$gpus_per_node" --ttl "$lease_s" ${WEFT_PLACE_ARGS:-})
"${place[@]}" --format table >&2
"${place[@]}" --format hostfile > "$workdir/hostfile"
"${place[@]}" --format env > "$workdir/env"

# Keep the lease alive while the job runs.
( while sleep $((lease_s / 3)); do
    "${weftctl[@]}" renew --job "$job" --ttl "$lease_s" >/dev/null || exit 0
  done ) &
renewer=$!

# srun reads the hostfile (one node per rank, in rank order) for
# --distribution=arbitrary. The env lines travel in the environment (srun exports it
# by default), and the per-task code below is passed inline, so compute nodes need
# neither a shared filesystem nor this script (sbatch runs a copy from its spool).
export SLURM_HOSTFILE="$workdir/hostfile"
WEFT_NODE_ENV="$(cat "$workdir/env")"
export WEFT_NODE_ENV
ranks="$(wc -l < "$workdir/hostfile")"

# Every task: export its node's line of WEFT_NODE_ENV ("NODE: NAME=VALUE ...", values
# shell-quoted where needed), set RANK/LOCAL_RANK/WORLD_SIZE from Slurm's, run the program.
# shellcheck disable=SC2016  # expanded by the task's shell, not here
task='
line=""
while IFS= read -r candidate; do
  if [ "${candidate%%: *}" = "$SLURMD_NODENAME" ]; then line="${candidate#*: }"; break; fi
done <<< "$WEFT_NODE_ENV"
if [ -z "$line" ]; then
  echo "weft-sbatch.sh: no Weft environment for node $SLURMD_NODENAME" >&2
  exit 1
fi
eval "export $line"
export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" WORLD_SIZE="$SLURM_NTASKS"
exec "$@"'
srun --ntasks="$ranks" --distribution=arbitrary bash -c "$task" weft-task "$@"
