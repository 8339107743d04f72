"""Closed-form validation cases, runnable: ``.venv/bin/python -m examples.<name>`` from the repository root.

Each module's ``run(...)`` simulates its case and returns the simulated numbers beside the closed-form
answer; its ``main()`` plots one against the other to out/examples/<name>.png. The tests in tests/solver
call the same ``run`` and assert on the numbers it returns. See examples/README.md.
"""
