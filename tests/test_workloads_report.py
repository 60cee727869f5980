"""The workloads report (``notebooks/workloads.ipynb``, ``wb.load_workloads``) rendered from imported result files
in a real papermill kernel, every figure on the page checked against the file it came from.

- an offline multi-workload ``sglang.bench_serving`` pair (request rate inf, three workloads per file):
  ``workbench report --from-runs`` picks this report alone and compares the workloads side by side, each
  spec/baseline ratio recomputed from the two files;
- an InferenceX file (two configurations x two concurrencies, seconds without unit suffixes) beside an AIPerf
  CSV export (another workload: refused as a comparison, the option named);
- a bench_serving pair measured on different endpoints (``sglang`` and ``sglang-oai``) compared with
  ``--unlike-arms``: the NOT LIKE-FOR-LIKE caveat opens the page and names the difference.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from report_page import page_problems

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
OFFLINE = [FIXTURES / "bench_serving" / f"offline_{arm}.jsonl" for arm in ("baseline", "eagle3")]
INFERENCEX = FIXTURES / "inferencex" / "agg_dsr1_1k1k_fp8_sglang_h200.json"
AIPERF_CSV = (
    FIXTURES / "aiperf_csv" / "meta-llama_Llama-3.3-70B-Instruct-openai-chat-concurrency4" / "profile_export_aiperf.csv"
)
NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "workloads.ipynb"


class _Tables(HTMLParser):
    """Every ``<table>`` of a page as rows of cell texts (the header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def figures_table(page: str) -> list[dict[str, str]]:
    """The report's table of figures (the one headed by workload, variant and load) as dicts by heading."""
    parser = _Tables()
    parser.feed(page)
    for table in parser.tables:
        if table and table[0][:3] == ["workload", "variant", "load"]:
            return [dict(zip(table[0], row)) for row in table[1:]]
    raise AssertionError("no table of figures on the page")


def shown(cell: str) -> float:
    """A table cell as a number (an em dash: NaN)."""
    return math.nan if cell == "—" else float(cell.replace(",", ""))


def close(cell: str, expected: float) -> bool:
    """The cell shows ``expected`` to the three significant figures (or two decimals) the formatter keeps."""
    value = shown(cell)
    return abs(value - expected) <= max(0.0051, 0.005 * abs(expected))


def text_of(page: str) -> str:
    page = re.sub(r"<svg.*?</svg>|<style.*?</style>|<script.*?</script>", " ", page, flags=re.S)
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    return re.sub(r"\( ", "(", re.sub(r" ([,.;:)])", r"\1", words))  # no space a tag left before punctuation


def _render(args: list[str], out: Path, runs: Path) -> str:
    result = CliRunner().invoke(app, ["report", *args, "--runs-dir", str(runs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result.output


def test_an_offline_multi_workload_bench_serving_pair_renders_the_workloads_side_by_side(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    imported = wb.import_results(OFFLINE, runs_dir=runs, engine="sglang").runs
    ids = list(imported["run_id"])
    output = _render(["--from-runs", *ids], tmp_path / "reports", runs)
    started = [ln for ln in output.splitlines() if ln.startswith("running ")]
    assert len(started) == 1 and "workloads.ipynb" in started[0], output  # no load axis: not spec_vs_baseline
    assert "not running spec_vs_baseline.ipynb: every level of the runs sent all its requests at once" in output
    page = (tmp_path / "reports" / "workloads.html").read_text()
    assert page_problems(tmp_path / "reports" / "workloads.html", tmp_path / "reports" / "workloads.ipynb") == []
    assert "FAILED" not in page and "Traceback" not in page and page.count("<svg") >= 3  # three charts drawn
    rows = figures_table(page)
    records = {
        (json.loads(line)["tag"], i): json.loads(line)
        for path in OFFLINE
        for i, line in enumerate(path.read_text().splitlines())
    }
    assert len(rows) == len(records) == 6
    by_workload: dict[str, dict[str, dict]] = {}
    for (tag, _), record in records.items():
        label = (
            f"dataset={record['dataset_name']} in={record['random_input_len']} out={record['random_output_len']}"
            if record["dataset_name"] == "random"
            else f"dataset={record['dataset_name']}"
        ) + " backend=sglang"
        by_workload.setdefault(label, {})[tag] = record
    for row in rows:
        record = by_workload[row["workload"]][row["variant"]]
        assert row["load"] == "all at once" and row["n"] == "1" and shown(row["completed"]) == record["completed"]
        for heading, key in (
            ("output throughput (tok/s)", "output_throughput"),
            ("request throughput (req/s)", "request_throughput"),
            ("mean ttft (ms)", "mean_ttft_ms"),
            ("p50 ttft (ms)", "median_ttft_ms"),
            ("p99 ttft (ms)", "p99_ttft_ms"),
            ("mean tpot (ms)", "mean_tpot_ms"),
            ("p50 tpot (ms)", "median_tpot_ms"),
            ("p99 tpot (ms)", "p99_tpot_ms"),
            ("mean e2e (ms)", "mean_e2e_latency_ms"),
            ("p50 e2e (ms)", "median_e2e_latency_ms"),
            ("p99 e2e (ms)", "p99_e2e_latency_ms"),
        ):
            assert close(row[heading], record[key]), (row["workload"], row["variant"], heading, row[heading])
        if row["variant"] == "eagle3":  # the ratios, from the two files
            base = by_workload[row["workload"]]["baseline"]
            assert row["compared with"] == row["workload"]
            for heading, key in (
                ("throughput ratio", "output_throughput"),
                ("ttft ratio", "mean_ttft_ms"),
                ("tpot ratio", "mean_tpot_ms"),
            ):
                assert row[heading] == f"{record[key] / base[key]:.2f}", (row["workload"], heading)
            assert close(row["accept length"], record["accept_length"])
        else:
            assert row["throughput ratio"] == "—" and row["accept length"] == "—"  # not recorded: a dash, never 0
    words = text_of(page)
    opening = words[words.index("In short") : words.index("Output throughput, workload by workload")]
    assert "3 workloads and 2 variants, every request of a workload sent at once (offline throughput)" in opening
    for label, arms in by_workload.items():
        ratio = arms["eagle3"]["output_throughput"] / arms["baseline"]["output_throughput"]
        assert f"x{ratio:.2f} on {label}, all at once" in opening, (label, opening)
    assert "NOT LIKE-FOR-LIKE" not in words and "Not compared" not in words
    for name in ("offline_baseline.jsonl", "offline_eagle3.jsonl", *ids):
        assert name in words  # where the figures come from
    index = text_of((tmp_path / "reports" / "index.html").read_text())
    assert "Workloads side by side" in index and "dataset=sharegpt backend=sglang" in index  # its scope


def test_inferencex_and_aiperf_csv_render_with_every_figure_from_their_files(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    inferencex = wb.import_results(INFERENCEX, runs_dir=runs, engine="sglang").runs
    aiperf = wb.import_results(AIPERF_CSV, runs_dir=runs, engine="sglang", variant="aiperf-llama70b").runs
    ids = [*inferencex["run_id"], *aiperf["run_id"]]
    output = _render([str(NOTEBOOK), "--from-runs", *ids], tmp_path / "reports", runs)
    assert (
        "not compared: variant aiperf-llama70b shares no workload with the baseline sglang-h200-fp8-tp8; "
        "--unlike-arms compares them" in output
    )  # the refusal, on the terminal, naming the option
    page = (tmp_path / "reports" / "workloads.html").read_text()
    assert "FAILED" not in page
    rows = figures_table(page)
    configs = json.loads(INFERENCEX.read_text())
    assert len(rows) == len(configs) + 1
    for config in configs:
        variant = "sglang-h200-fp8-tp8" + ("-mtp" if config["spec_decoding"] == "mtp" else "")
        [row] = [r for r in rows if r["variant"] == variant and r["load"] == f"concurrency {config['conc']}"]
        assert row["workload"] == f"in={config['isl']} out={config['osl']}"
        gpus = config["tp"] * config["pp"] * config["pcp_size"]  # what InferenceX divides its throughput by
        assert close(row["output throughput (tok/s)"], config["output_tput_per_gpu"] * gpus)
        for heading, key in (
            ("mean ttft (ms)", "mean_ttft"),
            ("p50 ttft (ms)", "median_ttft"),
            ("p99 ttft (ms)", "p99_ttft"),
            ("mean tpot (ms)", "mean_tpot"),
            ("p50 tpot (ms)", "median_tpot"),
            ("p99 tpot (ms)", "p99_tpot"),
            ("mean e2e (ms)", "mean_e2el"),
            ("p50 e2e (ms)", "median_e2el"),
            ("p99 e2e (ms)", "p99_e2el"),
            ("mean itl (ms)", "mean_itl"),
        ):
            assert close(row[heading], config[key] * 1000), (variant, heading, row[heading])  # seconds in the file
        if config["spec_decoding"] == "mtp":
            [base] = [c for c in configs if c["spec_decoding"] == "none" and c["conc"] == config["conc"]]
            assert row["throughput ratio"] == f"{config['output_tput_per_gpu'] / base['output_tput_per_gpu']:.2f}"
            assert row["tpot ratio"] == f"{config['mean_tpot'] / base['mean_tpot']:.2f}"
    # AIPerf's CSV: the request-metrics section (ms) and the system section, each read back from the file
    request: dict[str, dict[str, str]] = {}
    system: dict[str, str] = {}
    header: list[str] = []
    with AIPERF_CSV.open() as fh:
        for line in csv.reader(fh):
            if line[:1] == ["Metric"]:
                header = line
            elif len(line) > 2 and header[1:2] == ["avg"]:
                request[line[0]] = dict(zip(header, line))
            elif len(line) == 2 and header == ["Metric", "Value"]:
                system[line[0]] = line[1]
    [row] = [r for r in rows if r["variant"] == "aiperf-llama70b"]
    assert row["load"] == "concurrency 4" and row["workload"] == "default"  # from the artifact folder's name
    assert shown(row["completed"]) == float(system["Request Count"])
    assert close(row["output throughput (tok/s)"], float(system["Output Token Throughput (tokens/sec)"]))
    assert close(row["request throughput (req/s)"], float(system["Request Throughput (requests/sec)"]))
    for heading, metric, stat in (
        ("mean ttft (ms)", "Time to First Token (ms)", "avg"),
        ("p50 ttft (ms)", "Time to First Token (ms)", "p50"),
        ("p99 ttft (ms)", "Time to First Token (ms)", "p99"),
        ("mean tpot (ms)", "Inter Token Latency (ms)", "avg"),
        ("p99 tpot (ms)", "Inter Token Latency (ms)", "p99"),
        ("mean e2e (ms)", "Request Latency (ms)", "avg"),
        ("p99 e2e (ms)", "Request Latency (ms)", "p99"),
    ):
        assert close(row[heading], float(request[metric][stat])), (heading, row[heading])
    assert row["throughput ratio"] == "—" and row["compared with"] == ""  # another workload: not compared
    words = text_of(page)
    not_compared = words[words.index("Not compared") : words.index("Output throughput, workload by workload")]
    assert "aiperf-llama70b measured default and the baseline sglang-h200-fp8-tp8 in=1024 out=1024" in not_compared
    assert "render again with --unlike-arms (-p unlike_arms true)" in not_compared
    index = text_of((tmp_path / "reports" / "index.html").read_text())
    assert "deepseek-ai/DeepSeek-R1-0528" in index and "h200" in index  # model and GPU from the runs' own columns


def test_arms_on_different_endpoints_compare_only_on_request_under_a_caveat(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    ids = [
        wb.import_results(FIXTURES / "bench_serving" / name, runs_dir=runs).runs["run_id"].iloc[0]
        for name in ("bs059_baseline_details.jsonl", "bs059_eagle3_oai.jsonl")
    ]
    _render([str(NOTEBOOK), "--from-runs", *ids, "--unlike-arms"], tmp_path / "reports", runs)
    page = (tmp_path / "reports" / "workloads.html").read_text()
    words = text_of(page)
    caveat = words.index("NOT LIKE-FOR-LIKE")
    assert caveat < words.index("In short") < words.index("Output throughput, workload by workload")
    said = words[caveat : words.index("In short")]
    assert "asked for with unlike_arms (--unlike-arms)" in said
    assert (
        "eagle3-oai measured dataset=random-ids in=256 out=32 backend=sglang-oai and is compared with the baseline "
        "baseline measured dataset=random-ids in=256 out=32 backend=sglang"
    ) in said
    assert "endpoint (sglang vs sglang-oai)" in said and "workload (" not in said  # the one difference there is
    base, spec = (
        json.loads(line)
        for line in [
            (FIXTURES / "bench_serving" / "bs059_baseline_details.jsonl").read_text().splitlines()[1],
            (FIXTURES / "bench_serving" / "bs059_eagle3_oai.jsonl").read_text().splitlines()[0],
        ]
    )
    assert base["max_concurrency"] == spec["max_concurrency"] == 2  # the load both measured
    [row] = [r for r in figures_table(page) if r["variant"] == "eagle3-oai"]
    assert row["compared with"] == "dataset=random-ids in=256 out=32 backend=sglang"
    assert row["throughput ratio"] == f"{spec['output_throughput'] / base['output_throughput']:.2f}"
    assert "Not compared" not in words
