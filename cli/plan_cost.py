"""`plan`'s estimate in money (`cli.plan`): what the run would send, priced per million tokens in any
one currency (`--price-input`, `--price-output`, the judge's apart, or config `prices`). Without
prices nothing is printed.

Prompt tokens are `plan`'s estimate; output tokens are an assumption it states, per request:
OUTPUT_TOKENS per candidate request (a thinking model's reasoning plus its tool call or note) and
JUDGE_OUTPUT_TOKENS per judgment (the judge answers one JSON label with thinking off), overridable
with `--output-tokens` and `--judge-output-tokens`. No cache discount is assumed.
"""

from __future__ import annotations

import argparse

from mobilemem.errors import ConfigError
from mobilemem.records import PricesPreset

OUTPUT_TOKENS = 1_000
JUDGE_OUTPUT_TOKENS = 20
MTOK = 1_000_000
FLAGS = {"input_per_mtok": "--price-input", "output_per_mtok": "--price-output",
         "judge_input_per_mtok": "--judge-price-input", "judge_output_per_mtok": "--judge-price-output"}


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a price >= 0 per million tokens, got {text!r}")
    return value


def _tokens(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens >= 0, got {text!r}")
    return int(text)


HELP = {"input_per_mtok": "the candidate model's price per million input (prompt) tokens, any one currency",
        "output_per_mtok": "the candidate model's price per million output tokens (reasoning included)",
        "judge_input_per_mtok": "the judge model's price per million input tokens (default: the candidate's)",
        "judge_output_per_mtok": "the judge model's price per million output tokens (default: the candidate's)"}
PAIRS = (("input_per_mtok", "output_per_mtok"), ("judge_input_per_mtok", "judge_output_per_mtok"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for field, flag in FLAGS.items():
        parser.add_argument(flag, type=_price, metavar="PER_MTOK", dest=field,
                            help=f"{HELP[field]} (config prices.{field})")
    parser.add_argument("--output-tokens", type=_tokens, default=OUTPUT_TOKENS, metavar="N",
                        help=f"output tokens assumed per candidate request (default {OUTPUT_TOKENS:,})")
    parser.add_argument("--judge-output-tokens", type=_tokens, default=JUDGE_OUTPUT_TOKENS, metavar="N",
                        help=f"output tokens assumed per judge request (default {JUDGE_OUTPUT_TOKENS})")


def prices(args: argparse.Namespace, configured: PricesPreset) -> PricesPreset:
    """The configured prices with the flags given over them; half a pair is refused."""
    chosen = {field: value if (value := getattr(args, field)) is not None else getattr(configured, field)
              for field in FLAGS}
    for first, second in PAIRS:
        if (chosen[first] is None) != (chosen[second] is None):
            raise ConfigError(f"{FLAGS[first]} and {FLAGS[second]} (config prices.{first}, prices.{second}) go "
                              "together: give both or neither")
    if chosen["judge_input_per_mtok"] is not None and chosen["input_per_mtok"] is None:
        raise ConfigError("the judge's prices alone give no estimate: give --price-input and --price-output too")
    return PricesPreset.model_validate(chosen)


def _row(label: str, requests: int, prompt: int, output: int, money: float) -> str:
    return (f"  {label:<10}{requests:>9,} requests {prompt:>13,} input + {output:>11,} output tokens "
            f"= {money:>14,.4f}")


def cost_lines(sent: dict[str, tuple[int, int]], chosen: PricesPreset, output_tokens: int,
               judge_output_tokens: int) -> list[str]:
    """The money lines for `sent` (role -> requests, prompt tokens still to send); none without prices."""
    if chosen.input_per_mtok is None or chosen.output_per_mtok is None:
        return []
    judge_in = chosen.input_per_mtok if chosen.judge_input_per_mtok is None else chosen.judge_input_per_mtok
    judge_out = chosen.output_per_mtok if chosen.judge_output_per_mtok is None else chosen.judge_output_per_mtok
    rates = {"candidate": (chosen.input_per_mtok, chosen.output_per_mtok, output_tokens),
             "judge": (judge_in, judge_out, judge_output_tokens)}
    lines = [f"cost of what would be sent, per million tokens: candidate input {chosen.input_per_mtok:g}, output "
             f"{chosen.output_per_mtok:g}; judge input {judge_in:g}, output {judge_out:g} (any one currency, no cache "
             "discount);",
             f"  output tokens assumed per request: {output_tokens:,} per candidate request (reasoning included; "
             f"--output-tokens), {judge_output_tokens:,} per judge request (--judge-output-tokens):"]
    total = [0, 0, 0, 0.0]
    for role, (requests, prompt) in sent.items():
        price_in, price_out, per_request = rates[role]
        output = requests * per_request
        money = (prompt * price_in + output * price_out) / MTOK
        lines.append(_row(role, requests, prompt, output, money))
        total = [total[0] + requests, total[1] + prompt, total[2] + output, total[3] + money]
    return [*lines, _row("total", *total)]
