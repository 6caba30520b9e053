"""``pt schema NAME`` (and ``trace schema``): the bundle formats, printed readably."""

import lldb

from ..bundle import render_schema, schema_names
from .base import TraceCommand


class SchemaCommand(TraceCommand):
    name = "schema"
    short_help = "Show the JSON schema of a trace bundle format ('all' shows every format)."
    long_help = (
        "NAME is a trace plug-in: 'intel-pt' (the processor-trace RFC's bundle format) or\n"
        "'intel-pt-lldb' (the format LLDB's own intel-pt plug-in reads and writes). Both load with\n"
        "'pt load'. 'all' prints every schema."
    )

    def setup_command_definition(self):
        parser = self.get_parser()
        parser.add_argument_set([parser.make_argument_element(lldb.eArgTypeNone, repeat="plain")])

    def handle_argument_completion(self, args, arg_pos, cursor_pos):
        prefix = args[arg_pos][:cursor_pos] if arg_pos < len(args) else ""
        values = [name for name in (*schema_names(), "all") if name.startswith(prefix)]
        return {"values": values} if values else True

    def run(self, debugger, args, exe_ctx, result):
        if len(args) != 1:
            result.SetError(f"expected one schema name ({', '.join(schema_names())} or all)")
            return
        names = schema_names() if args[0] == "all" else [args[0]]
        result.AppendMessage("\n\n".join(render_schema(name) for name in names))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
