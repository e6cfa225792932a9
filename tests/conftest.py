"""Project-wide test configuration."""
import os
import sys

# helpers shared by test folders (random trees, small plants) live next to the tests
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "dynamics"))
