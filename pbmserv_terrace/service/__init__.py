"""The service layer: one handler per command, run inside one Unit of Work."""

from .core import CommandError, HandleResult, Service, WebPlay

__all__ = ["CommandError", "HandleResult", "Service", "WebPlay"]
