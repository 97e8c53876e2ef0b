"""Notes as their own resource: `PUT` / `GET /api/{kind}/{id}/note` for every kind in `NOTE_KINDS`
(a kind is its collection's name and the table whose delete token guards its notes: adding one is
one line). A note is never part of a finished run's immutable bytes: pages load it beside them,
and `GET /api/runs/{id}` puts it beside its stored answer."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.compare.notes import MAX_NOTE_CHARS, NOTE_PATTERN, NoteError, render_note, validate_note
from app.core.deps import SessionDep
from app.core.errors import ERROR_RESPONSES, InvalidInput, NotFound
from app.core.inputs import check_id
from app.core.models import Base, Fit, Measurement, Note, Run, Sweep, utcnow
from app.core.tokens import authorized
from app.core.web import json_response, require_json
from app.runs.schemas import NoteRead
from app.runs.service import ArtifactsDep

# Collection name -> the table of what a note is attached to (its delete token guards the note).
NOTE_KINDS: dict[str, type[Base]] = {"runs": Run, "sweeps": Sweep, "measurements": Measurement, "fits": Fit}

router = APIRouter(prefix="/api", tags=["notes"])
TokenHeader = Annotated[
    str | None, Header(description="The delete token of what the note is attached to (shown once).")
]


class NoteWrite(BaseModel):
    """Body of `PUT .../note`: plain text (an empty text deletes the note)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        description="At most 2,000 characters; no control character but newline and tab.",
        json_schema_extra={"maxLength": MAX_NOTE_CHARS, "pattern": NOTE_PATTERN},
    )


def _singular(kind: str) -> str:
    return kind.removesuffix("s")


def _target(session: Session, kind: str, target_id: str) -> Any:
    check_id(target_id, _singular(kind))
    return session.get(NOTE_KINDS[kind], target_id)


def get_note(session: Session, kind: str, target_id: str) -> Note | None:
    return session.scalar(select(Note).where(Note.kind == kind, Note.target_id == target_id))


def note_read(note: Note) -> dict[str, Any]:
    return {
        "text": note.text,
        "html": render_note(note.text),
        "version": note.version,
        "updated_at": note.updated_at.isoformat(),
    }


def read_note(session: Session, kind: str, target_id: str) -> Note | None:
    """The note of an existing target (`NotFound` if the target is not there)."""
    if _target(session, kind, target_id) is None:
        raise NotFound(f"{_singular(kind)} {target_id!r} not found")
    return get_note(session, kind, target_id)


def write_note(session: Session, kind: str, target_id: str, text: str, token: str | None) -> Note | None:
    """Store (or with an empty text delete) the note; the target's delete token is required."""
    authorized(_target(session, kind, target_id), token, f"{_singular(kind)} {target_id!r}")
    try:
        validate_note(text)
    except NoteError as exc:
        raise InvalidInput.one(["body", "text"], exc.reason) from None
    note = get_note(session, kind, target_id)
    if not text:
        if note is not None:
            session.delete(note)
        return None
    if note is None:
        note = Note(kind=kind, target_id=target_id, text=text, version=1, updated_at=utcnow())
        session.add(note)
    else:
        note.text, note.version, note.updated_at = text, note.version + 1, utcnow()
    session.flush()
    return note


def _routes(kind: str) -> None:
    what = _singular(kind)

    @router.get(
        f"/{kind}/{{target_id}}/note", response_model=NoteRead, responses=ERROR_RESPONSES, name=f"{what}_note"
    )
    def get(target_id: str, session: SessionDep) -> Response:
        note = read_note(session, kind, target_id)
        if note is None:
            raise NotFound(f"{what} {target_id!r} has no note")
        return json_response(note_read(note))

    @router.put(
        f"/{kind}/{{target_id}}/note",
        response_model=NoteRead,
        responses={**ERROR_RESPONSES, 204: {"description": "An empty text deleted the note."}},
        dependencies=[Depends(require_json)],
    )
    def put(
        target_id: str,
        body: NoteWrite,
        session: SessionDep,
        artifacts: ArtifactsDep,
        x_delete_token: TokenHeader = None,
    ) -> Response:
        note = write_note(session, kind, target_id, body.text, x_delete_token)
        answer = None if note is None else note_read(note)
        session.commit()
        if kind == "runs":  # the cached answer carries the note: read it again next time
            artifacts.forget_note(target_id)
        return Response(status_code=204) if answer is None else json_response(answer)

    get.__doc__ = f"The {what}'s note: its text, the text as safe HTML (links), and its version."
    put.__doc__ = (
        f"Set the {what}'s note (at most 2,000 characters of plain text; NUL and control characters "
        "but newline and tab refused); an empty text deletes it. Needs its `X-Delete-Token`."
    )


for _kind in NOTE_KINDS:
    _routes(_kind)
