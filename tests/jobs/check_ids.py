"""Recomputes every job id in `gridrun plan --format json` output (stdin) from its params, following
docs/grid.md independently of the C++ code: canonical JSON (sorted keys, no spaces, shortest float
repr) -> MurmurHash64A, seed 0 -> top 48 bits as 12 hex. Exits 1 on any mismatch."""
import json
import struct
import sys

M64 = (1 << 64) - 1


def murmur64a(data: bytes) -> int:
    m, r = 0xC6A4A7935BD1E995, 47
    h = (len(data) * m) & M64
    blocks = len(data) // 8
    for i in range(blocks):
        k = struct.unpack_from("<Q", data, i * 8)[0]
        k = (k * m) & M64
        k ^= k >> r
        k = (k * m) & M64
        h ^= k
        h = (h * m) & M64
    tail = data[blocks * 8:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & M64
    h ^= h >> r
    h = (h * m) & M64
    h ^= h >> r
    return h


# Parameters added after ids were published: left out of the hashed text at their default
# (docs/grid.md, "Job ids").
ID_OMITS_DEFAULT = {"cudnn_benchmark": True, "tf32": True, "cuda_graph": False,
                    "memory_format": "auto", "jobs_per_gpu": 1, "augment": "none",
                    "mlp_hidden": "256,128", "nodes": 1, "model_sha256": "",
                    "input": "auto", "repeat": 0, "data_sha256": "",
                    "command": "", "command_env": "", "command_sha256": "", "user_params": ""}
# A file's path is never hashed: its content hash (model_sha256, data_sha256, command_sha256)
# stands for it.
NOT_IN_ID = {"model_file", "data_file", "command_dir"}


def main() -> int:
    plan = json.load(sys.stdin)
    bad = 0
    for job in plan["jobs"]:
        params = {k: v for k, v in job["params"].items()
                  if k not in NOT_IN_ID and not (k in ID_OMITS_DEFAULT and v == ID_OMITS_DEFAULT[k])}
        canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
        want = "%016x" % murmur64a(canonical.encode())
        if job["id"] != want[:12]:
            print("job %d: id %s, recomputed %s from %s" % (job["index"], job["id"], want[:12],
                                                          canonical))
            bad += 1
    print("%d jobs, %d id mismatches" % (len(plan["jobs"]), bad))
    return 1 if bad or not plan["jobs"] else 0


if __name__ == "__main__":
    sys.exit(main())
