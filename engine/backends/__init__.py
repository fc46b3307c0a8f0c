"""Infrastructure backends behind one interface (see ``base``)."""

from .base import ApplyOutcome, Backend, InfraState, PlanOutcome, get_backend

__all__ = ["ApplyOutcome", "Backend", "InfraState", "PlanOutcome", "get_backend"]
