"""JSON Schema for tools, below the tool layer: one module per job.

- ``docstrings``: summaries and parameter descriptions from docstrings;
- ``neutral``: pydantic's schema cleaned into the neutral schema, raw-schema checks;
- ``walk``: keyword tables, JSON pointers, ``$ref`` resolution, the shared root checks
  and cleanups a compiler is written with;
- ``reports``: what a compiler returns (CompiledTool, CompileReport, SchemaChange) and
  the text ``toolwire check`` prints.

Compiling a tool (``compile_tool``, ``check_tools``, ``CompileOptions``, ``SchemaCompiler``)
needs tools and resolved turns, so it sits above them, in ``toolwire._compile``.
"""
