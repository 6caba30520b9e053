"""``pt schema NAME`` (and ``trace schema``): the bundle formats, printed readably."""

import lldb

from ..bundle import render_schema, schema_names
from .base import TraceCommand, help_paragraphs


class SchemaCommand(TraceCommand):
    name = "schema"
    short_help = "Show the JSON schema of a trace bundle format ('all' shows every format)."
    long_help = help_paragraphs(
        "<plugin> is a bundle format: 'intel-pt' (the processor-trace RFC's) or 'intel-pt-lldb' (the one LLDB's own"
        " intel-pt plug-in reads and writes, and 'trace save' writes). 'pt load' reads both. 'all' prints every"
        " schema. Each is printed as a commented JSON outline: a '?' marks an optional field."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypePlugin, repeat="plain")])

    def handle_argument_completion(self, args, arg_pos, cursor_pos):
        prefix = args[arg_pos][:cursor_pos] if arg_pos < len(args) else ""
        values = [name for name in (*schema_names(), "all") if name.startswith(prefix)]
        return {"values": values} if values else True

    def run(self, debugger, args, exe_ctx, result):
        if len(args) != 1:
            result.SetError(f"expected one schema name ({', '.join(schema_names())} or all)")
            return
        if args[0] not in (*schema_names(), "all"):
            result.SetError(f"no trace schema named '{args[0]}': give {', '.join(schema_names())} or all")
            return
        names = schema_names() if args[0] == "all" else [args[0]]
        result.AppendMessage("\n\n".join(render_schema(name) for name in names))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
