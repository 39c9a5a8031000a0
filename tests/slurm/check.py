#!/usr/bin/env python3
"""Reads a running Slurm cluster for test-slurm.sh and slurm-compare.sh.

sample DIR: every second until DIR/stop exists, reads `scontrol -d show
  job` and appends to DIR/samples.jsonl each running job's nodes, GPU
  indices per node, node count and comment.
verify DIR GPUS_PER_NODE: checks the samples: every running job ran on the
  nodes its comment says the library chose ("placed on ..."), started with
  all its nodes at once, and no GPU was held by two jobs at the same time.
  Prints one line per violation and exits 1 if there is any.
report DIR GPUS_PER_NODE: the side-by-side figures of one run (doc/slurm.md)
  as JSON: from DIR/kinds (job id and kind per line), the samples and
  `scontrol show job`: racks and blocks each gang spans, GPUs stranded on
  partly used nodes, gangs started, submit-to-start seconds.
"""
import itertools
import json
import os
import re
import subprocess
import sys
import time


def expand(hostlist):
    """b0r[0-1]n[0-3],x1 -> every name, as Slurm's hostlist does."""
    names, depth, cur = [], 0, ""
    for ch in hostlist:
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    if cur:
        names.append(cur)
    out = []
    for name in names:
        parts = re.split(r"(\[[^\]]*\])", name)
        choices = []
        for p in parts:
            if p.startswith("["):
                vals = []
                for r in p[1:-1].split(","):
                    if "-" in r:
                        a, b = r.split("-")
                        vals += [str(i).zfill(len(a)) for i in range(int(a), int(b) + 1)]
                    else:
                        vals.append(r)
                choices.append(vals)
            else:
                choices.append([p])
        out += ["".join(c) for c in itertools.product(*choices)]
    return out


def indices(spec):
    out = set()
    for r in spec.split(","):
        if "-" in r:
            a, b = r.split("-")
            out.update(range(int(a), int(b) + 1))
        elif r.isdigit():
            out.add(int(r))
    return out


def running_jobs():
    text = subprocess.run(["scontrol", "-d", "show", "job"], capture_output=True, text=True).stdout
    jobs = []
    for block in text.split("\n\n"):
        m = re.search(r"JobId=(\d+)", block)
        st = re.search(r"JobState=(\S+)", block)
        if not m or not st or st.group(1) != "RUNNING":
            continue
        nl = re.search(r"\n\s*NodeList=(\S+)", block)
        nn = re.search(r"NumNodes=(\d+)", block)
        cm = re.search(r"\n\s*Comment=(.*)", block)
        gres = {}
        for node, idx in re.findall(r"\n\s+Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu[^\n(]*\(IDX:([^)]*)\)", block):
            for n in expand(node):
                gres[n] = sorted(indices(idx))
        jobs.append({"id": int(m.group(1)), "nodes": expand(nl.group(1)) if nl else [],
                     "num_nodes": int(nn.group(1)) if nn else 0, "gres": gres,
                     "comment": cm.group(1).strip() if cm else ""})
    return jobs


def sample(d):
    with open(os.path.join(d, "samples.jsonl"), "a") as f:
        while not os.path.exists(os.path.join(d, "stop")):
            f.write(json.dumps({"t": time.time(), "jobs": running_jobs()}) + "\n")
            f.flush()
            time.sleep(1)


def verify(d, gpus_per_node):
    bad, seen = [], {}
    with open(os.path.join(d, "samples.jsonl")) as f:
        samples = [json.loads(line) for line in f if line.strip()]
    for s in samples:
        held = {}
        for j in s["jobs"]:
            m = re.search(r"placed on (\S+)", j["comment"])
            if not m:
                bad.append(f"job {j['id']} runs on {','.join(j['nodes'])} with no placement by the library")
            elif sorted(expand(m.group(1))) != sorted(j["nodes"]):
                bad.append(f"job {j['id']} runs on {','.join(j['nodes'])}, the library chose {m.group(1)}")
            if len(j["nodes"]) != j["num_nodes"]:
                bad.append(f"job {j['id']} runs on {len(j['nodes'])} of its {j['num_nodes']} nodes")
            seen[j["id"]] = j["nodes"]
            for node, idx in j["gres"].items():
                for g in idx:
                    if g >= gpus_per_node:
                        bad.append(f"job {j['id']}: GPU {g} of {node} does not exist")
                    if (node, g) in held:
                        bad.append(f"GPU {g} of {node} held by jobs {held[(node, g)]} and {j['id']}")
                    held[(node, g)] = j["id"]
    for line in sorted(set(bad)):
        print("FAIL:", line)
    print(f"{len(samples)} samples, {len(seen)} jobs seen running, {len(set(bad))} violations")
    with open(os.path.join(d, "ran.json"), "w") as f:
        json.dump(seen, f)
    return 1 if bad else 0


def spans(nodes):
    racks = {re.sub(r"n\d+$", "", n) for n in nodes}
    blocks = {re.sub(r"r\d+n\d+$", "", n) for n in nodes}
    return len(racks), len(blocks)


def times(job):
    text = subprocess.run(["scontrol", "show", "job", str(job)], capture_output=True, text=True).stdout
    sub = re.search(r"SubmitTime=(\S+)", text)
    st = re.search(r"StartTime=(\S+)", text)
    state = re.search(r"JobState=(\S+)", text)
    if not sub or not st or st.group(1) in ("Unknown", "None"):
        return None
    t = [time.mktime(time.strptime(x, "%Y-%m-%dT%H:%M:%S")) for x in (sub.group(1), st.group(1))]
    return t[1] - t[0] if state and state.group(1) == "RUNNING" else None


def report(d, gpus_per_node):
    with open(os.path.join(d, "samples.jsonl")) as f:
        samples = [json.loads(line) for line in f if line.strip()]
    kinds = {}
    with open(os.path.join(d, "kinds")) as f:
        for line in f:
            job, kind = line.split()
            kinds[int(job)] = kind
    ran = {}
    for s in samples:
        for j in s["jobs"]:
            ran[j["id"]] = j["nodes"]
    last = samples[-1]["jobs"] if samples else []
    used = {}
    for j in last:
        for node, idx in j["gres"].items():
            used[node] = used.get(node, 0) + len(idx)
    stranded = sum(gpus_per_node - u for u in used.values() if 0 < u < gpus_per_node)
    gangs = {}
    for job, kind in sorted(kinds.items()):
        if kind == "single":
            continue
        nodes = ran.get(job)
        gangs[f"{kind} {job}"] = {"started": nodes is not None,
                                 "racks_blocks": list(spans(nodes)) if nodes else None}
    waits = [t for t in (times(j) for j in kinds) if t is not None]
    out = {"gangs": gangs, "stranded_gpus": stranded,
           "gangs_started": sum(g["started"] for g in gangs.values()), "gangs_total": len(gangs),
           "start_s_mean": round(sum(waits) / len(waits), 1) if waits else None}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if sys.argv[1] == "sample":
        sample(sys.argv[2])
    elif sys.argv[1] == "report":
        report(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "verify":
        sys.exit(verify(sys.argv[2], int(sys.argv[3])))
    else:
        sys.exit(__doc__)
