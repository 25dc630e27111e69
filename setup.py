"""Build and install the Go engine: the C core (src_c/, via cffi) and the engine/train packages."""
from setuptools import setup

setup(
    name="goengine",
    version="1.15.0",     # = engine.__version__; its second field stays >= 15 (see there)
    description="A Go engine that trains itself: C PUCT search, torch networks, GTP, AlphaZero training",
    # tools/ (benchmarks and experiments) stays in the repository: no generic top-level name installs
    packages=["engine", "engine.analysis", "engine.cli", "engine.gtp", "engine.nets", "engine.play", "train", "train.cluster", "train.games", "train.learn", "train.match", "engine.shipped_weights"],
    # the networks in weights/ install as engine/shipped_weights (the engine's default nets)
    package_dir={"engine.shipped_weights": "weights"},
    package_data={"engine.shipped_weights": ["*.pt", "*.json", "*.md"]},
    python_requires=">=3.9",
    setup_requires=["cffi>=1.15"],
    cffi_modules=["src_c/build_core.py:ffibuilder"],
    install_requires=[
        "cffi>=1.15",
        "numpy>=1.22",
        "torch>=2.0",
        "sgfmill>=1.1",
        "tqdm>=4.0",
        "matplotlib>=3.5",   # train.report and tools.experiments draw PNG plots
    ],
    extras_require={
        "test": ["pytest>=7", "ray>=2.9"],   # tests/cluster/test_ray_cluster.py runs in CI
        "cluster": ["ray>=2.9"],
    },
    entry_points={"console_scripts": ["goengine=engine.__main__:main"]},
)
