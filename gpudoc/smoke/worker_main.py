"""``python -m gpudoc.smoke.worker_main``: a smoke worker's process entry, stdlib first.

The worker ties its life to its parent's (PR_SET_PDEATHSIG) before it imports torch, which
takes seconds: a parent SIGKILLed during that start-up must not leave a worker behind.
"""

from __future__ import annotations

import sys

from gpudoc.smoke.spawn import end_with_parent


def main() -> int:
    end_with_parent()
    from gpudoc.smoke.worker import main as work

    return work()


if __name__ == "__main__":
    sys.exit(main())
