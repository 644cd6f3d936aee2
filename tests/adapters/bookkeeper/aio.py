"""Run ``async def`` tests without an asyncio pytest plugin, each bounded by a timeout."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec

P = ParamSpec("P")

DEFAULT_TEST_TIMEOUT = 30.0


def async_test(
    timeout: float = DEFAULT_TEST_TIMEOUT,
) -> Callable[[Callable[P, Coroutine[Any, Any, None]]], Callable[P, None]]:
    """Decorate an ``async def`` test: it runs in a fresh event loop and fails after ``timeout``."""

    def decorate(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
        @functools.wraps(test)
        def run(*args: P.args, **kwargs: P.kwargs) -> None:
            async def bounded() -> None:
                async with asyncio.timeout(timeout):
                    await test(*args, **kwargs)

            asyncio.run(bounded())

        return run

    return decorate
