"""``python -m gpudoc.smoke.worker_main``: a smoke worker's process entry, stdlib first.

The worker ties its life to its parent's (PR_SET_PDEATHSIG) before it imports torch, which
takes seconds: a parent SIGKILLed during that start-up must not leave a worker behind. Once its
result is sent it exits at once (``exit_now``), without tearing torch down.
"""

from __future__ import annotations

from typing import NoReturn

from gpudoc.smoke.spawn import end_with_parent, exit_now


def main() -> NoReturn:
    end_with_parent()
    from gpudoc.smoke.worker import main as work

    exit_now(work())


if __name__ == "__main__":
    main()
