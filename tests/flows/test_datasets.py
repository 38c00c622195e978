"""Datasets: four formats, every row validated before anything runs, errors that name file and line."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from evalduck.flows.inputs.datasets import DatasetError, DatasetPathError, dataset_from_rows, load_dataset
from evalduck.scorers import ScorerInput


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_errors_name_every_bad_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", '{"input": "q", "output": "a"}\n\n{"output": "x"}\n{"input": "q", "foo": 1}\n'
                  '{"input": 3}\n{not json\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems[0] == f"{path} line 3: missing `input`"  # a bad line does not hide the others
    assert err.value.problems[-1] == (f"{path} line 6: not valid JSON (Expecting property name enclosed in double "
                                      "quotes at column 2)")
    _write(path, '{"input": "q"}\n\n{"output": "x", "id": "b-1"}\n{"input": "q", "foo": 1}\n{"input": 3}\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [
        f"{path} line 3 (item 'b-1'): missing `input`",
        f"{path} line 4: unknown field `foo` (fields: id, input, output, groundTruth, requestContext, metadata, "
        "context, expectedTool, expectedToolOrder)",
        f"{path} line 5: `input` must be a string or a list of chat messages, got int: 3",
    ]


@pytest.mark.parametrize(
    "value",
    ["q", {"role": "user", "content": "q"}, [{"role": "user", "content": "q"}], 3, [{"role": "user"}], ["q"], b"q"],
)
def test_text_fields_follow_the_scorers_rule(value: object) -> None:
    """A row's input/output/groundTruth is accepted exactly when a scorer run would accept it."""
    try:
        ScorerInput(input=value, output="a", ground_truth=value)
    except ValueError as exc:
        with pytest.raises(DatasetError) as err:
            dataset_from_rows([{"input": "q", "output": "a", "groundTruth": value}])
        assert "`groundTruth" in str(err.value) and "`ground_truth" in str(exc)
    else:
        (item,) = dataset_from_rows([{"input": value, "groundTruth": value}]).items
        assert item.input == item.ground_truth == ([value] if isinstance(value, dict) else value)


def test_nested_message_errors_name_the_message(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", '{"input": [{"role": "user", "content": 3}]}\n{"input": {"content": "x"}}\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [
        f"{path} line 1: `input[0]`.content must be a string, got int: 3",
        f"{path} line 2: `input`.role must be a string, got None",
    ]


def test_json_csv_parquet_and_memory(tmp_path: Path) -> None:
    json_path = _write(tmp_path / "d.json", '[\n  {"input": "q1", "output": "a"},\n\n  {"id": 7,\n   "output": "x"}\n]\n')
    with pytest.raises(DatasetError, match=r"d.json line 4 \(item 7\): missing `input`"):
        load_dataset(json_path)
    _write(json_path, json.dumps({"items": [{"input": "q", "groundTruth": "g", "requestContext": {"u": 1}}]}))
    (item,) = load_dataset(json_path).items
    assert (item.ground_truth, item.request_context) == ("g", {"u": 1})

    csv_path = _write(tmp_path / "d.csv", 'id,input,output,metadata\n1,"two\nlines",a,"{""k"": 2}"\n2,,b,\n')
    with pytest.raises(DatasetError, match=r"d.csv line 4 \(item '2'\): missing `input`"):
        load_dataset(csv_path)
    _write(csv_path, 'id,input,output,metadata\n1,"two\nlines",a,"{""k"": 2}"\n')
    (row,) = load_dataset(csv_path).items
    assert (row.item_id, row.input, row.metadata) == ("1", "two\nlines", {"k": 2})

    pq = tmp_path / "d.parquet"
    duckdb.sql(f"COPY (SELECT 'q' || i AS input, 'o' AS output FROM range(3) t(i)) TO '{pq}'")
    assert [i.input for i in load_dataset(pq).items] == ["q0", "q1", "q2"]

    same = dataset_from_rows([{"input": "a"}, {"input": "a"}])
    assert same.items[1].item_id == same.items[0].item_id + "#2"  # identical rows stay two items
    with pytest.raises(DatasetError, match="row 2: missing `input`"):
        dataset_from_rows([{"input": "a"}, {"output": "b"}])


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such dataset file"):
        load_dataset(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match="unknown dataset format '.txt'"):
        load_dataset(_write(tmp_path / "d.txt", "x"))
    # a path that names no dataset file is the caller's mistake: told apart from bad rows, the path kept apart
    with pytest.raises(DatasetPathError) as err:
        load_dataset(tmp_path)
    assert err.value.problem.startswith("is a folder, not a dataset file") and str(err.value).startswith(str(tmp_path))
    with pytest.raises(DatasetPathError, match="no extension to tell the dataset format by"):
        load_dataset(_write(tmp_path / "Makefile", "x"))


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(("name", "data"), [
    ("excel.csv", BOM + b"id,input,output\r\n1,What?,Yes.\r\n"),  # Excel's "CSV UTF-8"
    ("notepad.jsonl", BOM + b'{"id": "1", "input": "What?", "output": "Yes."}\n'),
    ("notepad.json", BOM + b'[{"id": "1", "input": "What?", "output": "Yes."}]'),
], ids=["csv", "jsonl", "json"])
def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path, name: str, data: bytes) -> None:
    (tmp_path / name).write_bytes(data)
    (item,) = load_dataset(tmp_path / name).items
    assert (item.item_id, item.input, item.output) == ("1", "What?", "Yes.")
    (tmp_path / f"plain{Path(name).suffix}").write_bytes(data.removeprefix(BOM))
    assert load_dataset(tmp_path / f"plain{Path(name).suffix}").hash == load_dataset(tmp_path / name).hash


@pytest.mark.parametrize(("name", "data", "where"), [
    ("latin1.jsonl", b'{"input": "ok", "output": "ok"}\n{"input": "caf\xe9", "output": "ok"}\n',
     "line 2: not valid UTF-8 (byte 0xe9 at column 15, byte offset 46 of the file)"),
    ("latin1.csv", BOM + b'input,output\nok,"two\nlines"\n"\xe2\x82\xac caf\xe9",ok\n',
     "line 4: not valid UTF-8 (byte 0xe9 at column 7, byte offset 39 of the file)"),
    ("latin1.json", b'[\n {"input": "ok"},\n {"input": "caf\xe9"}]\n',
     "line 3: not valid UTF-8 (byte 0xe9 at column 16, byte offset 35 of the file)"),
], ids=["jsonl", "csv", "json"])
def test_invalid_utf8_names_file_line_and_byte(tmp_path: Path, name: str, data: bytes, where: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    (problem,) = err.value.problems
    assert problem.startswith(f"{path} {where}"), problem
    assert "save the file as UTF-8" in problem and f"iconv -f windows-1252 -t utf-8 {name} >" in problem
    assert ('"CSV UTF-8"' in problem) == name.endswith(".csv")


def test_csv_errors_name_the_file_line_each_row_starts_on(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.csv", 'id,input,metadata\n1,,\n\n2,"two\nlines",\n3,,{}\n4,x,not json\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [f"{path} line 2 (item '1'): missing `input`", f"{path} line 6 (item '3'): missing "
                                  "`input`", f"{path} line 7: `metadata` must be a JSON object, got 'not json'"]
    _write(path, 'id,input,metadata\n1,,\n\n2,"two\nlines",\n3,,{}\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [f"{path} line 2 (item '1'): missing `input`",
                                  f"{path} line 6 (item '3'): missing `input`"]
    assert [i.where for i in load_dataset(_write(path, 'input\n\nq1\n"q\n2"\nq3\n')).items] == [
        f"{path} line 3", f"{path} line 4", f"{path} line 6"]


def test_a_csv_without_an_input_column_says_so_once(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.csv", "id,question,output\n1,What?,Yes.\n2,Why?,Because.\n")
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [f"{path} line 1: no `input` column (the columns are 'id', 'question', 'output'); "
                                  "name the question column `input`"]


def test_a_jsonl_syntax_error_has_its_own_column(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", '{"input": "a"}\r\n{"input": "a", "output": "b"\r\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert str(err.value) == f"{path} line 2: not valid JSON (Expecting ',' delimiter at column 29)"


def test_rag_and_agent_fields_are_validated_with_file_and_line(tmp_path: Path) -> None:
    """context, expectedTool, expectedToolOrder (snake_case too) and tool calls in outputs, by the scorers' rules."""
    calls = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "search"}}]}
    good = [
        {"input": "q", "output": "a", "context": "one passage"},
        {"input": "q", "output": "a", "context": []},
        {"input": "q", "output": [calls, {"role": "tool", "content": "r", "tool_call_id": "c1"}],
         "expected_tool": "search", "expected_tool_order": ["search"]},
    ]
    bad = [
        {"input": "q", "context": ["ok", 3]},
        {"input": "q", "context": {"p": 1}},
        {"input": "q", "expectedTool": ""},
        {"input": "q", "expectedToolOrder": []},
        {"input": "q", "expectedToolOrder": ["search", " "]},
        {"input": "q", "output": [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": ""}}]}]},
        {"input": "q", "output": [{"role": "user", "content": "x", "tool_calls": []}]},
    ]
    path = _write(tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in good + bad))
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert err.value.problems == [
        f"{path} line 4: `context[1]` must be a string (one passage), got int: 3",
        f"{path} line 5: `context` must be a string or a list of strings (passages), got dict: {{'p': 1}}",
        f"{path} line 6: `expectedTool` must be a non-empty string (a tool name), got ''",
        f"{path} line 7: `expectedToolOrder` must be a non-empty list of tool names, got []",
        f"{path} line 8: `expectedToolOrder[1]` must be a non-empty string (a tool name), got ' '",
        f"{path} line 9: `output[0].tool_calls[0].function.name` must be a non-empty string, got ''",
        f"{path} line 10: `output[0].tool_calls` is only allowed on an assistant message, got role 'user'",
    ]
    _write(path, "".join(json.dumps(r) + "\n" for r in good))
    one, empty, agent = load_dataset(path).items
    assert (one.context, empty.context) == (["one passage"], [])
    assert (agent.expected_tool, agent.expected_tool_order, agent.output[0]["tool_calls"][0]["id"]) == (
        "search", ["search"], "c1")
    assert agent.store_record()["expected_tool_order"] == ["search"] and agent.to_row()["expectedTool"] == "search"
    # CSV: a context cell is one passage, or a JSON array of them; a tool order is a JSON array.
    csv_path = _write(tmp_path / "d.csv", 'input,context,expectedToolOrder\nq,plain text,"[""a"", ""b""]"\n'
                      'q2,"[""p1"", ""p2""]",\nq3,"[oops",\n')
    with pytest.raises(DatasetError) as err:
        load_dataset(csv_path)
    assert err.value.problems == [f"{csv_path} line 4: `context` must be a JSON array of strings, got '[oops'"]
    _write(csv_path, 'input,context,expectedToolOrder\nq,plain text,"[""a"", ""b""]"\nq2,"[""p1"", ""p2""]",\n')
    first, second = load_dataset(csv_path).items
    assert (first.context, first.expected_tool_order, second.context) == (["plain text"], ["a", "b"], ["p1", "p2"])
