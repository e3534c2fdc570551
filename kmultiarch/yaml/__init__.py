"""YAML text: reading streams with node positions, locating source lines, editing text minimally."""
