"""The Slurm job's steps in a container image (pyxis/enroot: `srun --container-image`,
`--container-mounts`), pure: what `stoker submit --image` adds to the sbatch script."""

from __future__ import annotations

from dataclasses import dataclass, replace

from launchers import builders as b
from launchers import quoting as q
from reports.shared.errors import UsageError

# the image and mounts as the script's variables (script_lines sets them)
IMAGE_VAR, MOUNTS_VAR = "$IMAGE", "$MOUNTS"
# a step the batch script ran on its own node runs there as a one-task step in the image
ON_FIRST = ("1", "1", "$FIRST")


@dataclass(frozen=True, kw_only=True, slots=True)
class Mounts:
    """The job's paths a step in the image must see, each mounted at its own path."""

    out: str  # the results dir
    local_path: str | None  # None: the job's per-node default ($LOCAL_IO is mounted all the same)
    shared_path: str | None  # None: inside the results dir
    more: tuple[str, ...] = ()  # the spec's further storage paths


def in_image(image: str | None, step: b.SrunSpec) -> b.SrunSpec:
    """A step that runs stoker: in the image, with the job's mounts; without one, as it is."""
    if image is None:
        return step
    return replace(step, container_image=IMAGE_VAR, container_mounts=MOUNTS_VAR)


def on_first(image: str | None, program: list[str]) -> list[str]:
    """A stoker command the batch script runs on its own node: as it is, or with an image a
    one-task step on that node ($FIRST) in the image (the node itself need not have stoker)."""
    if image is None:
        return program
    return b.srun(in_image(image, b.SrunSpec(program=tuple(program), nodes=1, on=ON_FIRST, label=False)))


def mount_path(path: str, what: str) -> str:
    """One path as pyxis mounts it (SRC:DST, comma-separated): no comma, colon or blank."""
    q.plain(path, what)
    if any(c in path for c in ",:") or any(c.isspace() for c in path):
        raise UsageError(
            f"{what} {path!r}: a path mounted into --image cannot hold a comma, colon or blank; give another"
        )
    return path


def script_lines(image: str | None, m: Mounts) -> list[str]:
    """With an image: the script's IMAGE and MOUNTS (the results dir, the node-local test dir,
    the shared one when it is not inside the results dir, the further storage paths); else none."""
    if image is None:
        return []
    image = q.matching(image, q.IMAGE, "--image", "one image reference (registry/name:tag, name.sqsh)")
    for path, what in ((m.out, "--out"), (m.local_path, "--local-path"), (m.shared_path, "--shared-path")):
        if path:
            mount_path(path, what)
    more = "".join(q.word(f",{mount_path(p, 'a storage path')}:{p}", "a storage path") for p in m.more)
    shared = ",$SHARED_IO:$SHARED_IO" if m.shared_path else ""
    return [
        "# --image: every step that runs stoker runs in it (pyxis/enroot), these paths mounted at their own",
        f"IMAGE={q.word(image, '--image')}",
        f'MOUNTS="$OUT:$OUT,$LOCAL_IO:$LOCAL_IO{shared}"{more}',
    ]
