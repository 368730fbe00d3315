"""Run BrowserGym on a page and print timings as JSON (executed inside BrowserGym's venv).

Usage: python bgym_peer.py URL STEPS TUNED(0|1)
"""

import json
import statistics
import sys
import time


def main() -> None:
    args = sys.argv[1:]
    if len(args) != 3 or not args[1].isdigit() or args[2] not in ("0", "1"):
        sys.exit(__doc__)
    try:
        import browsergym.core  # noqa: F401  (registers browsergym/openended)
        import gymnasium as gym
    except ImportError as exc:
        sys.exit(f"{exc}: run this with the Python of BrowserGym's own venv.\n{__doc__}")
    url, steps, tuned = args[0], int(args[1]), args[2] == "1"
    kwargs = {"task_kwargs": {"start_url": url}, "headless": True}
    if tuned:
        kwargs.update(slow_mo=0, pre_observation_delay=0.0)
    env = gym.make("browsergym/openended", **kwargs)
    resets = []
    for _ in range(2):
        t = time.perf_counter()
        obs, _ = env.reset()
        resets.append(time.perf_counter() - t)
    props = obs.get("extra_element_properties", {})
    # click the page's buttons (their BrowserGym ids) in turn
    targets = [bid for bid, p in props.items() if p.get("clickable")] or list(props)
    times = []
    errors = 0
    for i in range(steps):
        bid = targets[i % len(targets)] if targets else "0"
        t = time.perf_counter()
        obs, _reward, _term, _trunc, _info = env.step(f'click("{bid}")')
        times.append(time.perf_counter() - t)
        errors += bool(obs.get("last_action_error"))
    env.close()
    print(
        json.dumps(
            {
                "reset_s": statistics.median(resets),
                "step_s": statistics.median(times),
                "steps": steps,
                "errors": errors,
                "n_elements": len(props),
            }
        )
    )


if __name__ == "__main__":
    main()
