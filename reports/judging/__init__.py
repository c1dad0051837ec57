"""Judging: spec, catalog, comparison with advertised figures, the starvation model, localisation, detection."""
