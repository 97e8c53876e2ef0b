"""idlelab's service layer: FastAPI app, storage, job runner and command line around `engine`."""
