#!/bin/sh
# The work of `runner run` on a queue, scripted by hand with the docker and
# git CLIs: the baseline of BenchmarkBatch. For each task: a clone of the
# repository, a container with the limits of a runner sandbox, the clone
# copied in, ten commands (nine `true`, then one that writes a file), the
# workspace copied back out, a commit pushed to a new branch of the
# repository, the container removed. CONCURRENCY tasks run at once.
#
#   baseline-batch.sh IMAGE REPO TASKS CONCURRENCY WORKDIR LABEL
#
# LABEL (key=value) marks the containers, so that the caller can check that
# none is left.
set -eu

if [ "$1" = task ]; then
	id=t$2
	dir=$WORK/$id
	git clone -q "$REPO" "$dir"
	c=$(docker run -d --init --network none --cap-drop ALL --security-opt no-new-privileges \
		--memory 4g --memory-swap 4g --cpus 1 --pids-limit 512 --ulimit nofile=4096:4096 \
		--read-only --tmpfs /tmp:rw,nosuid,nodev,size=4g,mode=1777 \
		--tmpfs /var/tmp:rw,nosuid,nodev,size=4g,mode=1777 \
		--tmpfs /home/sandbox:rw,nosuid,nodev,size=4g,mode=0700 \
		--mount 'type=volume,dst=/workspace,volume-opt=type=tmpfs,volume-opt=device=tmpfs,"volume-opt=o=size=4g,mode=0755"' \
		--log-opt max-size=1m --log-opt max-file=1 --label "$LABEL" -w /workspace \
		--entrypoint sleep "$IMAGE" 7200)
	docker cp "$dir/." "$c:/workspace"
	i=0
	while [ $i -lt 9 ]; do
		docker exec "$c" sh -c true
		i=$((i + 1))
	done
	docker exec "$c" sh -c 'echo task-done > DONE.txt'
	docker cp "$c:/workspace/." "$dir"
	git -C "$dir" add -A
	git -C "$dir" commit -q -m "baseline: $id"
	git -C "$dir" push -q origin "HEAD:refs/heads/agent/$id"
	docker rm -f -v "$c" >/dev/null
	rm -rf "$dir"
	exit 0
fi

IMAGE=$1 REPO=$2 TASKS=$3 CONCURRENCY=$4 WORK=$5 LABEL=$6
export IMAGE REPO WORK LABEL
seq 1 "$TASKS" | xargs -P "$CONCURRENCY" -I '{}' sh "$0" task '{}'
