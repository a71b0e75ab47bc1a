"""The ``kernellab`` command: one typer app, one module per command group.

Errors a user can fix (a missing file, a malformed task, a bad flag) end with one line on stderr and
exit status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import logging
import signal
import sys

from kernellab.cli.early_start import run_as_command, start_fork_server_early

if run_as_command():  # before the imports below bring torch in
    start_fork_server_early(sys.argv)

import typer  # noqa: E402

from kernellab.cli import (  # noqa: E402
    agents_cmd,
    check_cmd,
    doctor,
    eval_cmd,
    optimize_cmd,
    report_cmd,
    run_cmd,
    solve_cmd,
    tasks_cmd,
)
from kernellab.cli.errors import (  # noqa: E402
    ClickUsageError,
    NoArgsIsHelp,
    UsageError,
    click_usage_error,
    report_usage_error,
)
from kernellab.cli.options import HELP_MARKUP  # noqa: E402

app = typer.Typer(name="kernellab", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=HELP_MARKUP,
                  help="Benchmark, verify and optimize GPU kernels written by AI coding agents.")
app.command("eval")(eval_cmd.eval_command)
app.command("doctor")(doctor.doctor_command)
app.add_typer(tasks_cmd.app, name="tasks")
app.command("check")(check_cmd.check_command)
app.add_typer(agents_cmd.app, name="agents")
app.command("report")(report_cmd.report_command)
app.command("leaderboard")(report_cmd.leaderboard_command)
app.command("solve")(solve_cmd.solve_command)
app.command("run")(run_cmd.run_command)
app.command("optimize")(optimize_cmd.optimize_command)


def main() -> None:
    # Ctrl-C (SIGINT) stops every command the same way, also one started with SIGINT ignored (a
    # background job of a script, some CI runners): Python leaves an inherited "ignore" in place, and
    # each command turns KeyboardInterrupt into keeping what it computed and exit 130.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    debug = "--debug" in sys.argv
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        # click's own errors (a flag of the wrong type, a missing option) come back here instead of
        # as its multi-line usage box, so they read like every other usage error: one line, exit 2
        code = app(standalone_mode=False)
    except ClickUsageError as exc:
        if isinstance(exc, NoArgsIsHelp):
            exc.show()  # the command's help, as asked for by giving no arguments
            sys.exit(exc.exit_code)
        report_usage_error(click_usage_error(exc), debug)
        sys.exit(2)
    except UsageError as exc:
        report_usage_error(exc, debug)
        sys.exit(2)
    except (KeyboardInterrupt, typer.Abort):
        typer.secho("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a defect of ours: one line, the traceback with --debug
        report_usage_error(RuntimeError(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)"), False)
        if debug:
            raise
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
