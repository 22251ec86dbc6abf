"""Prometheus metrics shared by every service, and the gRPC server interceptor."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from prometheus_client import Counter, Histogram

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)

GRPC_REQUESTS = Counter(
    "paiju_grpc_requests_total", "gRPC requests handled, by method and status code",
    ["service", "method", "code"])
GRPC_LATENCY = Histogram(
    "paiju_grpc_request_seconds", "gRPC request latency (streams: whole stream life)",
    ["service", "method", "code"], buckets=LATENCY_BUCKETS)


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc has no type hints: Any
    """Counts every RPC and records its latency by method and final status code."""

    def __init__(self, service: str) -> None:
        self.service = service

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        service = self.service

        def record(started: float, context: Any, error: BaseException | None) -> None:
            code = context.code() if context is not None else None
            if code is None:
                code = grpc.StatusCode.UNKNOWN if error is not None else grpc.StatusCode.OK
            name = code.name if hasattr(code, "name") else str(code)
            GRPC_REQUESTS.labels(service, method, name).inc()
            GRPC_LATENCY.labels(service, method, name).observe(time.perf_counter() - started)

        if handler.unary_unary:
            inner = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                started = time.perf_counter()
                try:
                    result = await inner(request, context)
                except BaseException as exc:
                    record(started, context, exc)
                    raise
                record(started, context, None)
                return result

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer)
        if handler.stream_stream:
            inner_ss = handler.stream_stream

            async def stream_stream(request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
                started = time.perf_counter()
                try:
                    async for item in inner_ss(request_iterator, context):
                        yield item
                except BaseException as exc:
                    record(started, context, exc)
                    raise
                record(started, context, None)

            return grpc.stream_stream_rpc_method_handler(
                stream_stream, handler.request_deserializer, handler.response_serializer)
        return handler
