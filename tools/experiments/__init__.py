"""The training-design experiments: ``python -m tools.experiments pipelines | summary | strength |
register | work | unit | report | anchors`` (:mod:`tools.experiments.cli` lists them).

- ``pipelines``: what gating and the pipeline design cost self-play;
- ``strength``, ``runs``: designs trained to the same FLOPs and rated in one folder;
- ``registry``, ``report``, ``paired``, ``anchors``: the seed experiment, pre-registered and
  committed unit by unit (docs/seed-experiment.md), its analysis and its fixed anchors;
- ``search_ab``: search options against C's defaults, a match at equal visits or time.
"""
