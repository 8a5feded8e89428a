"""Ready-made targets for engines users already have (``--target graphlint.targets.hf:make_target``).

Each module here imports its framework lazily inside its factory: ``graphlint check`` never
imports this package, and an install without the framework gets a one-line error naming the
extra to install, not a traceback.
"""
