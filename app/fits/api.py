"""The fits API: fit a twin to an imported platform, list and read fits, delete (cancel) one, and
ask a finished twin what-if."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Header, Query, Request
from fastapi.responses import Response

from app.core.deps import SessionDep
from app.core.errors import ERROR_RESPONSES
from app.core.inputs import MAX_OFFSET, TEXT
from app.core.tokens import authorized
from app.core.web import absolute, json_response, require_json
from app.fits import service
from app.fits.runner import FitRunnerDep
from app.fits.service import FitCreate, FitList, FitRead, FitSubmitted, WhatIfCreate, WhatIfSubmitted
from app.runs.lifecycle import SubmitterDep

router = APIRouter(prefix="/api", tags=["fits"])
TokenHeader = Annotated[str | None, Header(description="The token the fit's POST gave.")]


@router.post(
    "/platforms/{name}/fit",
    status_code=202,
    response_model=FitSubmitted,
    responses=ERROR_RESPONSES,
    dependencies=[Depends(require_json)],
)
def create_fit(
    request: Request,
    name: str,
    session: SessionDep,
    runner: FitRunnerDep,
    body: Annotated[FitCreate, Body(description="`{}`: every default.")],
) -> Response:
    """Fit a twin to an imported machine's counters (`{"seed"?, "budget"?, "cpus"?, "unlisted"?}`):
    202 with its id, link and delete token (shown once). A platform without counters, counters
    that cannot come from one boot, or a budget outside 100..20,000 is a 422 saying why."""
    made = service.submit(session, name, body)
    session.commit()
    runner.queued()
    return json_response({**made, "url": absolute(request, service.fit_path(made["id"]))}, 202)


@router.get("/fits", response_model=FitList, responses=ERROR_RESPONSES)
def list_fits(
    session: SessionDep,
    platform: Annotated[
        str | None, Query(max_length=64, description="Only this platform's fits.", json_schema_extra=TEXT)
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    """Listed fits, newest first."""
    return json_response(service.list_view(session, platform=platform, limit=limit, offset=offset))


@router.get("/fits/{fit_id}", response_model=FitRead, responses=ERROR_RESPONSES)
def get_fit(fit_id: str, session: SessionDep) -> Response:
    """A fit: status and progress; once done the measured and fitted figures, the distance, the
    misses, the history, the cross-validation and the fitted config (an ordinary run config)."""
    return json_response(service.fit_view(session, fit_id))


@router.delete("/fits/{fit_id}", status_code=204, responses=ERROR_RESPONSES)
def delete_fit(
    fit_id: str, session: SessionDep, runner: FitRunnerDep, x_delete_token: TokenHeader = None
) -> Response:
    """Delete a fit (a running one is cancelled); needs its `X-Delete-Token`. Its what-if runs
    stay (each has its own token)."""
    fit = authorized(service.find_fit(session, fit_id), x_delete_token, f"fit {fit_id!r}")
    service.delete(session, fit)
    session.commit()
    runner.cancel(fit_id)
    return Response(status_code=204)


@router.post(
    "/fits/{fit_id}/whatif",
    status_code=202,
    response_model=WhatIfSubmitted,
    responses={**ERROR_RESPONSES, 409: {"description": "The fit is not done"}},
    dependencies=[Depends(require_json)],
)
def create_whatif(
    request: Request, fit_id: str, body: WhatIfCreate, session: SessionDep, submit: SubmitterDep
) -> Response:
    """Run the twin with `changes` (a partial SimConfig merged into its config: governor, disabled
    states, PM QoS limit, `irq_enable` on C1, package limit, wake mechanism, tick...): 202 with the
    ordinary run (`id`, `url`, `delete_token`), its twin's baseline run and the side-by-side page."""
    made = service.submit_whatif(session, submit, fit_id, body)
    made["url"] = absolute(request, made["url"])
    made["whatif_url"] = absolute(request, made["whatif_url"])
    return json_response(made, 202)
