"""Trajectory visualisation.

* :func:`to_html` — a self-contained HTML replay (three.js embedded in the page: no network) of one
  or several environments of a trajectory, shown inline in Jupyter / Colab;
* :func:`plot_contact_forces`, :func:`plot_energy` — matplotlib plots of a trajectory, and the
  arrays behind them (:func:`contact_force_series`, :func:`energy_series`).
"""

from ._html import LAYOUTS, MAX_ENVIRONMENTS, HTMLReplay, to_html
from ._plots import contact_force_series, energy_series, plot_contact_forces, plot_energy, select_env

__all__ = [
    "to_html",
    "HTMLReplay",
    "LAYOUTS",
    "MAX_ENVIRONMENTS",
    "contact_force_series",
    "energy_series",
    "plot_contact_forces",
    "plot_energy",
    "select_env",
]
