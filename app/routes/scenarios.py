"""Built-in scenario routes (placeholder so the app imports; the scenarios author replaces it)."""

from fastapi import APIRouter

router = APIRouter()
