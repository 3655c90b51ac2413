"""tune-ledger: an event-sourced ledger for PyPTO performance-tuning campaigns."""

__version__ = "0.1.0"
