"""Parameter studies: a study file (docs/sweep.md) → one run per case on Dask → a summary table.

- :mod:`~mbsim.study.studyfile`: the study file, validated like a scenario (key paths and lines,
  did-you-mean), and every case's scenario validated before anything runs (:class:`StudyError`);
- :mod:`~mbsim.study.keypaths`: ``connectors[shock].damping`` into a scenario;
- :mod:`~mbsim.study.designs`: grid, random and Latin-hypercube samples;
- :mod:`~mbsim.study.metrics`: the numbers kept per case (``max`` of ``bodies[bob].position[2]``, …);
- :mod:`~mbsim.study.worker`: one case on a Dask worker, and the kernels' warm-up;
- :mod:`~mbsim.study.engine`: the cluster, failures, resume, Ctrl-C (:func:`sweep`);
- :mod:`~mbsim.study.table`: ``summary.csv`` and ``summary.h5`` (an xarray Dataset).

Reading and validating a study needs no Dask; running one needs ``pip install 'mbsim[sweep]'``.
"""
from __future__ import annotations

from .studyfile import Case, Study, StudyError, load_study, parse_study, study_from_dict  # noqa: F401


def sweep(study, *, client=None, output=None, workers=None, resume=False, scheduler=None, progress=False):
    """Run a parameter study and return its summary table as an :class:`xarray.Dataset`.

    ``study`` is a study file, a dict with its content, or a :class:`Study`; ``client`` an existing
    ``dask.distributed.Client`` (default: a LocalCluster of ``workers`` processes, or the cluster at
    ``scheduler`` / ``DASK_SCHEDULER_ADDRESS``).  The full description is
    :func:`mbsim.study.engine.sweep`'s (importing it imports Dask).
    """
    from .engine import sweep as run
    return run(study, client=client, output=output, workers=workers, resume=resume, scheduler=scheduler,
               progress=progress)


__all__ = ["Study", "Case", "StudyError", "load_study", "parse_study", "study_from_dict", "sweep"]
