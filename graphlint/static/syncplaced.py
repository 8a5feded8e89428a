"""Where a synchronize :mod:`.syncpending` flags as free is placed: ``info``, with the reason.

Kept apart from the flow: this is the linker's side, which knows the contexts (a per-token loop of
the function's own, captured code) and, through :class:`.quietcalls.QuietCalls`, what the project
calls a conditional flag stepped over do.
"""

from __future__ import annotations

from graphlint.static.quietcalls import QuietCalls  # noqa: F401 (the placement's, by contexts)


IDLE_NOTE = (" (nothing pending: on every way round the per-token loop the host's last device event before it is"
             " a blocking read or synchronize, so the device is idle; by the README's synchronize rule it costs nothing)")
AFTER_NOTE = (" (nothing pending: on every path through its function the host's last device event before it is"
              " a blocking read or synchronize, so the device is idle; by the README's synchronize rule it costs nothing)")
ENTRY_NOTE = (" (nothing pending: it is its function's first device event, and every call of the function is made"
              " in a per-token loop after the previous step's call ended in a wait; by the README's synchronize"
              " rule it costs nothing)")
WAITED_NOTE = (" (the next device event after it is a blocking read, which waits for the same work:"
               " it costs nothing extra)")


def idle_placed(placed: tuple, fid, cand, loop_bodies: dict, chains: dict, quiet=None) -> tuple:
    """``info`` for a synchronize flagged by :func:`mark_idle_syncs` that costs nothing: waited
    for anyway, or idle through the back edge of a per-token or step loop of its own function
    that no other hot function reaches it through (a loop run once per outer step has its entry
    on the step's path); never in captured code, where any synchronize breaks the capture. A
    conditional flag counts when ``quiet`` (:class:`.quietcalls.QuietCalls`) finds its project
    calls launch nothing."""
    flags = cand.flags
    if cand.in_capture or fid in chains.get("graph", ()):
        return placed
    holds = (lambda k: quiet.holds(fid, int(k))) if quiet is not None else (lambda k: False)
    if "sync-after-wait" in flags or any(f.startswith("sync-after-wait-if:") and holds(f[19:]) for f in flags):
        return placed[0], "info", AFTER_NOTE
    if "sync-waited" in flags or any(f.startswith("sync-waited-if:") and holds(f[15:]) for f in flags):
        return placed[0], "info", WAITED_NOTE
    own_loop = lambda f, loop: loop in set().union(*(loop_bodies[c].get(f, ()) for c in ("eager", "host"))) and \
        not any(f in chains[c] and chains[c][f] != (f,) for c in chains)  # noqa: E731
    if quiet is not None and ("sync-first" in flags or any(f.startswith("sync-first-if:") and holds(f[14:])
                                                           for f in flags)) and quiet.entered_idle(fid, own_loop):
        return placed[0], "info", ENTRY_NOTE
    loops = {int(f[10:]) for f in flags if f.startswith("sync-idle:")}
    loops |= {int(f.split(":")[1]) for f in flags if f.startswith("sync-idle-if:") and holds(f.split(":")[2])}
    own = set().union(*(loop_bodies[c].get(fid, ()) for c in ("eager", "host")))
    if loops and loops <= own and not any(fid in chains[c] and chains[c][fid] != (fid,) for c in chains):
        return placed[0], "info", IDLE_NOTE
    return placed
