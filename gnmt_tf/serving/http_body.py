"""Reading an HTTP request body with a size limit, for the FastAPI front
ends (`gnmt_tf.serving.rest_server`, `gnmt_tf.gateway.service`).

The body is read as it streams in and the reading stops as soon as it
passes the limit, so a huge body, with a Content-Length or chunked without
one, costs at most `limit` bytes of memory and is refused at once.
"""

from typing import Optional

import fastapi


class BodyTooLarge(ValueError):
    """A request body over the limit (HTTP 413).

    Attributes:
      limit: int. The limit in bytes.
      size: int or None. The declared size (Content-Length), if given.
    """

    def __init__(self, limit: int, size: Optional[int] = None):
        self.limit = limit
        self.size = size
        what = (f"request body of {size:,} bytes" if size is not None
                else "request body")
        super().__init__(f"{what} is over the limit of {limit:,} bytes")


async def read_body(request: fastapi.Request, limit: int) -> bytes:
    """The request's body; `BodyTooLarge` as soon as it is over `limit`
    bytes (at once when its Content-Length says so)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit, int(declared))
    # One growing buffer: a large one is its own mapping, which goes back
    # to the OS when freed, where a list of small chunks would stay in the
    # allocator's heap.
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge(limit)
        body += chunk
    return bytes(body)
