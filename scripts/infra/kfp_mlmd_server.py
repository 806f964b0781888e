"""A gRPC MetadataStoreService over the ml-metadata package's own store (local KFP backend).

The ``ml-metadata`` 1.17.1 wheel ships the store as a pybind extension and the service's gRPC
definitions, but no server binary. This process serves every method of
``ml_metadata.MetadataStoreService`` that the extension implements by handing the request bytes
to the extension and returning its response bytes, so the store's own code does all the work
(schema, migrations, queries). Calls are serialized on one store connection.

Run it with the Python of its own venv (ml-metadata pins protobuf < 5)::

    python kfp_mlmd_server.py --host 127.0.0.1 --port 8080 --sqlite /path/metadb.sqlite
    python kfp_mlmd_server.py --port 8080 --mysql-socket /run/mysqld.sock --mysql-db metadb

It stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import grpc
from ml_metadata.metadata_store.pywrap import metadata_store_extension
from ml_metadata.proto import metadata_store_pb2, metadata_store_service_pb2

SERVICE = "ml_metadata.MetadataStoreService"


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", action="append", default=[], help="address to listen on")
    parser.add_argument("--port", type=int, required=True)
    db = parser.add_mutually_exclusive_group(required=True)
    db.add_argument("--sqlite", help="SQLite file of the store")
    db.add_argument("--mysql-socket", help="MySQL/MariaDB unix socket of the store")
    parser.add_argument("--mysql-db", default="metadb")
    parser.add_argument("--mysql-user", default="root")
    return parser.parse_args(argv)


def _connection_config(args: argparse.Namespace) -> metadata_store_pb2.ConnectionConfig:
    config = metadata_store_pb2.ConnectionConfig()
    if args.sqlite:
        config.sqlite.filename_uri = args.sqlite
        config.sqlite.connection_mode = (
            metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
        )
    else:
        config.mysql.socket = args.mysql_socket
        config.mysql.database = args.mysql_db
        config.mysql.user = args.mysql_user
    return config


def _handler(store: Any, method: Callable[..., Any], lock: threading.Lock) -> grpc.RpcMethodHandler:
    """A unary handler passing the raw request bytes to one extension function."""

    def call(request: bytes, context: grpc.ServicerContext) -> bytes:
        with lock:
            response, message, code = method(store, request)
        if code != 0:
            context.abort(grpc.StatusCode[_code_name(code)], message.decode("utf-8", "replace"))
        return bytes(response)

    return grpc.unary_unary_rpc_method_handler(call)


def _code_name(code: int) -> str:
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return str(status.name)
    return "UNKNOWN"


def _service_handler(store: Any) -> grpc.GenericRpcHandler:
    lock = threading.Lock()
    service = metadata_store_service_pb2.DESCRIPTOR.services_by_name["MetadataStoreService"]
    handlers = {
        m.name: _handler(store, getattr(metadata_store_extension.metadata_store, m.name), lock)
        for m in service.methods
        if hasattr(metadata_store_extension.metadata_store, m.name)
    }
    return grpc.method_handlers_generic_handler(SERVICE, handlers)


def main(argv: list[str]) -> int:
    """Opens the store, serves it until SIGTERM/SIGINT; returns the exit code."""
    args = _parse_args(argv)
    migration = metadata_store_pb2.MigrationOptions(enable_upgrade_migration=True)
    store = metadata_store_extension.metadata_store.CreateMetadataStore(
        _connection_config(args).SerializeToString(), migration.SerializeToString()
    )
    server = grpc.server(_thread_pool())
    server.add_generic_rpc_handlers((_service_handler(store),))
    for host in args.host or ["127.0.0.1"]:
        server.add_insecure_port(f"{host}:{args.port}")
    server.start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(f"MLMD gRPC server on port {args.port}", flush=True)
    done.wait()
    server.stop(grace=2).wait()
    return 0


def _thread_pool() -> Any:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=8)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
