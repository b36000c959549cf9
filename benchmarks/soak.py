"""Memory over a long run: one server's resident memory against the commands it has served.

    script/benchmark soak [--utterances 10000] [--every 100] [--rounds 5] [--hangups 50] [--out DIR]

The demo model's held-out commands (held-out voices), sent one after another, each on a
new connection as Home Assistant opens one per command, in its 10 ms chunks and as fast
as the server takes them. The server's resident memory (VmRSS) is read every ``--every``
commands. Then ``--rounds`` rounds of ``--hangups`` clients at once that hang up half-way
through their command, and the resident memory after each round. Every transcript must
equal the first one of the same audio, and none may be empty: a run that loses words
while memory stays flat is no soak.

Reported: the growth over the second half of the commands (the acceptance: under 2%),
and the last hang-up round against the first (under 5%). Writes DIR/soak.json and
DIR/soak.png (resident memory against the count; default DIR: local/benchmark).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tools.client import describe, stream
from tools.corpus import heldout_commands
from tools.plots import pyplot
from tools.server_process import ServerProcess, memory_kib, start_server
from tools.speech import Speech, as_speech, speak


@dataclass
class Soak:
    """What one run measured."""

    server_flags: list[str]
    #: (commands served, resident MiB) every ``every`` commands, the first at 0 (after one warm-up command).
    resident: list[tuple[int, float]] = field(default_factory=list)
    #: Resident MiB after each round of mid-stream hang-ups.
    after_hangups: list[float] = field(default_factory=list)
    #: Transcripts that differed from the first of the same audio, and empty ones.
    changed: int = 0
    empty: int = 0
    seconds: float = 0.0

    @property
    def second_half_growth(self) -> float | None:
        """Growth of resident memory from the middle reading to the last, as a fraction of the middle."""
        if len(self.resident) < 3:
            return None
        middle = self.resident[len(self.resident) // 2][1]
        return (self.resident[-1][1] - middle) / middle

    @property
    def hangup_growth(self) -> float | None:
        """The last hang-up round's resident memory against the first's."""
        if len(self.after_hangups) < 2:
            return None
        return (self.after_hangups[-1] - self.after_hangups[0]) / self.after_hangups[0]


async def settled(server: ServerProcess) -> None:
    """Wait until the server has dealt with what was sent (a describe answered, then a moment for the
    inference thread to drop a hung-up stream's work)."""
    await describe(server.host, server.port)
    await asyncio.sleep(2.0)


async def soak(server: ServerProcess, corpus: list[Speech], args: argparse.Namespace, result: Soak) -> None:
    pid = server.process.pid
    first: dict[int, str] = {}
    began = time.monotonic()
    for count in range(args.utterances + 1):  # command 0 warms up and is not counted
        index = count % len(corpus)
        reply = await stream(server.host, server.port, corpus[index], language="en", speed=None)
        text = reply.text if "transcript" in reply.types else ""
        result.empty += not text
        result.changed += first.setdefault(index, text) != text
        if count % args.every == 0:
            result.resident.append((count, round(memory_kib(pid) / 1024, 1)))
            elapsed = time.monotonic() - began
            print(f"{count} commands: {result.resident[-1][1]} MiB ({elapsed:.0f} s)", flush=True)
    for round_index in range(args.rounds):
        # Each client sends half its command as fast as the server takes it, then hangs up.
        speeches = [corpus[(round_index + i) % len(corpus)] for i in range(args.hangups)]
        await asyncio.gather(
            *(
                stream(server.host, server.port, s, language="en", speed=None, hang_up_after_s=s.seconds / 2)
                for s in speeches
            )
        )
        await settled(server)
        result.after_hangups.append(round(memory_kib(pid) / 1024, 1))
        print(f"hang-up round {round_index + 1}: {result.after_hangups[-1]} MiB", flush=True)
    result.seconds = round(time.monotonic() - began, 1)


def plot(result: Soak, path: Path) -> str:
    plt = pyplot()
    if plt is None:
        return "skipped: matplotlib is not installed"
    figure, (commands, hangups) = plt.subplots(1, 2, figsize=(9, 3.5), width_ratios=(3, 1))
    commands.plot(*zip(*result.resident, strict=True), marker=".")
    commands.set_xlabel("commands served, each on a new connection")
    commands.set_ylabel("resident memory (MiB)")
    commands.set_ylim(bottom=0)
    commands.grid(alpha=0.3)
    hangups.plot(range(1, len(result.after_hangups) + 1), result.after_hangups, marker="o")
    hangups.set_xlabel("round of mid-stream hang-ups")
    hangups.set_ylim(bottom=0)
    hangups.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=10_000, help="commands, one after another (10,000)")
    parser.add_argument("--every", type=int, default=100, help="read resident memory every this many commands")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of mid-stream hang-ups (5)")
    parser.add_argument("--hangups", type=int, default=50, help="clients at once in a round (50)")
    parser.add_argument("--corpus", type=int, default=20, help="distinct held-out commands, taken in turn (20)")
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    parser.add_argument("server_flags", nargs="*", help="flags for the server, after --")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = [as_speech(speak(u["text"], u["voice"], 165, 50)) for u in heldout_commands()[: args.corpus]]
    result = Soak(server_flags=args.server_flags)
    server = start_server(Path("demo"), args.out / "soak-server.log", *args.server_flags)
    try:
        asyncio.run(soak(server, corpus, args, result))
    finally:
        server.stop()
    summary = {
        **asdict(result),
        "second_half_growth": result.second_half_growth,
        "hangup_growth": result.hangup_growth,
        "plot": plot(result, args.out / "soak.png"),
    }
    (args.out / "soak.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "resident"}), flush=True)


if __name__ == "__main__":
    main()
