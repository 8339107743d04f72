"""Fuzz the scene and recording loaders (issue 23): prints one JSON line. Run from the repository root:

    .venv/bin/python -m scripts.bench.fuzz_files                      # 1,000 scene and 1,000 recording files
    .venv/bin/python -m scripts.bench.fuzz_files --examples 400 --seed 2

Each example is a small scene (bodies, ropes, a plane, a box and a tube) or a short recording of it, mutated
1 to 3 times by tests/solver/file_mutations.py (the fuzz test's mutations, here driven by a seeded random
generator), written to a file and loaded; a scene is then built into a Simulation, as `python -m quadric_solver run`
does. Outcomes are counted by exception type. An escape is an exception other than ValueError (the documented
type; SceneFileError is one); "unclear" counts ValueErrors that name neither the file nor a body, rope or
collider. Uses only the public API, so it also measures older versions of the solver.
"""
import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time

from tests.solver.file_mutations import (load_recording, load_scene_and_build, mutated_recording_file,
                                         mutated_scene_file, outcome, recording_members, scene_document,
                                         small_scene)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=1000, help="mutated files per kind (scene, recording)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=5, help="escapes to show, with their mutations")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    scene = small_scene()
    kinds = {"scene": (scene_document(scene), mutated_scene_file, load_scene_and_build, "json"),
             "recording": (recording_members(scene), mutated_recording_file, load_recording, "npz")}
    result = dict(examples=0, seed=args.seed, outcomes={}, escapes=0, unclear=0, by_file={}, shown=[])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for kind, (base, mutate, load, extension) in kinds.items():
            counts = collections.Counter()
            escapes = unclear = 0
            path = os.path.join(folder, f"{kind}.{extension}")
            for _ in range(args.examples):
                data, mutations = mutate(base, rng.randrange)
                with open(path, "wb") as handle:
                    handle.write(data)
                name, escaped, clear, message = outcome(lambda: load(path), path)
                counts[name] += 1
                escapes += escaped
                unclear += not escaped and not clear
                if escaped and len(result["shown"]) < args.show:
                    result["shown"].append(dict(file=kind, mutations=mutations, error=f"{name}: {message}"[:200]))
            result["by_file"][kind] = dict(examples=args.examples, outcomes=dict(counts.most_common()),
                                           escapes=escapes, unclear=unclear)
            result["examples"] += args.examples
            result["escapes"] += escapes
            result["unclear"] += unclear
            result["outcomes"].update({name: result["outcomes"].get(name, 0) + n for name, n in counts.items()})
    result["escape_ratio"] = round(result["escapes"] / max(result["examples"], 1), 4)
    result["seconds"] = round(time.perf_counter() - start, 1)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
