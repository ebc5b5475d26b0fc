"""The built-in tools, one module per family, over the run's ``Workspace``.

Families and groups: records (``read_records``, ``search_records``, ``count_records``,
``record_history``, ``record_tree``), structure (with ``lint_schema``, ``resolve_route``),
files (with ``find_missing_files``, ``file_references``; every file tool takes a root name),
documents (``search_documents``, ``fetch_document``), code, configuration (``get_config``,
``check_config``), accounts (``list_users``, ``list_users_raw``, ``list_roles``), system (incl.
``probe_url``, ``list_scheduled_jobs``, ``list_deprecations``) and editing (``update_record``,
``set_field``, ``insert_record``, ``link_records``, ``write_file``: every call waits for an
operator's approval). Every built-in declares its group and data class explicitly; admin-only
where it exposes diagnostics or secrets.
"""

from __future__ import annotations

from toolwire.tools.api import Tool
from toolwire.tools.builtin.accounts import list_roles, list_users, list_users_raw
from toolwire.tools.builtin.code import read_source, search_code
from toolwire.tools.builtin.config import check_config, get_config
from toolwire.tools.builtin.deprecations import list_deprecations
from toolwire.tools.builtin.documents import fetch_document, search_documents
from toolwire.tools.builtin.editing import insert_record, set_field, update_record
from toolwire.tools.builtin.files import browse_folder, file_info, find_files
from toolwire.tools.builtin.history import record_history
from toolwire.tools.builtin.jobs import list_scheduled_jobs
from toolwire.tools.builtin.linking import link_records
from toolwire.tools.builtin.lint import lint_schema
from toolwire.tools.builtin.probe import probe_url
from toolwire.tools.builtin.records import count_records, read_records, search_records
from toolwire.tools.builtin.references import file_references, find_missing_files
from toolwire.tools.builtin.routes import resolve_route
from toolwire.tools.builtin.structure import get_relations, get_table_schema, list_tables
from toolwire.tools.builtin.system import (
    fetch_logs,
    get_env,
    get_env_raw,
    get_last_exception,
    get_system_status,
    list_packages,
    search_logs,
)
from toolwire.tools.builtin.tree import record_tree
from toolwire.tools.builtin.writing import write_file


def builtin_tools() -> list[Tool]:
    """Every built-in, in the order a tools listing shows them."""
    return [
        read_records, search_records, count_records, record_history, record_tree,
        list_tables, get_table_schema, get_relations, lint_schema, resolve_route,
        browse_folder, find_files, file_info, find_missing_files, file_references,
        read_source, search_code,
        search_documents, fetch_document,
        get_config, check_config,
        list_users, list_users_raw, list_roles,
        get_env, get_env_raw, get_system_status, list_packages, fetch_logs, search_logs,
        get_last_exception, list_deprecations, list_scheduled_jobs,
        probe_url,
        update_record, set_field, insert_record, link_records, write_file,
    ]  # fmt: skip


__all__ = ["builtin_tools"]
