"""Importers: SeeGULL Multilingual (real files), the EspanStereo format in CSV/JSON Lines/Parquet,
generic CSV with a column map, clear errors for wrong columns, the CLI's report."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from monitor.stereo import validate as v
from monitor.stereo.importers import (
    ESPANSTEREO_COLUMNS,
    StereoImportError,
    import_file,
    parse_mapping,
    seegull_country,
)
from store import stereo as store

SEEGULL = {"MX": ("seegull-multilingual_es_in_MX.csv", 1745), "ES": ("seegull-multilingual_es_in_ES.csv", 1344)}

ESPAN_ROWS = [
    {"Stereotype Category": "Género", "Stereotype": "Las mujeres conducen mal.", "Target Group": "mujeres",
     "Context Sentence": "Mi tía sacó el coche.", "Stereotype Sentence": "Chocó al aparcar.",
     "Counter-Stereotype Sentence": "Aparcó a la primera.", "Country": "México"},
    {"Stereotype Category": "Edad", "Stereotype": "Los mayores no usan el móvil.", "Target Group": "personas mayores",
     "Context Sentence": "Mi abuelo compró un móvil.", "Stereotype Sentence": "No supo encenderlo.",
     "Counter-Stereotype Sentence": "Lo configuró solo.", "Country": "AR"},
    {"Stereotype Category": "Religión", "Stereotype": "", "Target Group": "x",
     "Context Sentence": "", "Stereotype Sentence": "", "Counter-Stereotype Sentence": "", "Country": "CO"},
]


def _csv_count(path):
    """The split computed straight from the file with the csv module: stereotype votes > half of all votes."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    kept = sum(1 for r in rows if 2 * int(r["stereotype"]) > int(r["stereotype"]) + int(r["non_stereotype"]) + int(r["unsure"]))
    return rows, kept


@pytest.mark.parametrize("country", ["MX", "ES"])
def test_seegull_real_file_stores_every_row_with_its_votes(shared_data, writer_db, country):
    name, expected = SEEGULL[country]
    path = shared_data / "stereotypes" / name
    result = import_file(writer_db, path, "seegull")
    rows, kept = _csv_count(path)
    assert len(rows) == expected
    assert result.rows_read == result.candidates_in_file == result.candidates_new == expected
    assert result.by_country == {country: expected}
    stored = list(writer_db.query(
        "select identity, attribute, votes_stereotype, votes_non_stereotype, votes_unsure, keep_rule, extra_json "
        "from stereo_candidates where country = ? order by source_row", [country]))
    assert len(stored) == expected
    for row, s in zip(rows, stored, strict=True):  # votes kept exactly as published, row by row
        assert (s["identity"], s["attribute"]) == (row["identity"], row["attribute"])
        assert (s["votes_stereotype"], s["votes_non_stereotype"], s["votes_unsure"]) == (
            int(row["stereotype"]), int(row["non_stereotype"]), int(row["unsure"]))
        assert json.loads(s["extra_json"])["mean_offensive_score"] == row["mean_offensive_score"]
        assert s["keep_rule"] == v.RULE_MAJORITY
    # the kept split under the majority rule, from the store, equals the direct count on the CSV
    assert result.kept == kept
    assert kept not in (0, expected)
    status = store.candidates(writer_db, country)
    from monitor.stereo.report import candidate_decisions

    decisions = candidate_decisions(status, store.ratings(writer_db), 3)
    assert int((decisions["status"] == v.KEPT).sum()) == kept
    assert int((decisions["status"] == v.DROPPED).sum()) == expected - kept


def test_seegull_reimport_is_idempotent_and_country_comes_from_the_name(shared_data, writer_db):
    path = shared_data / "stereotypes" / SEEGULL["MX"][0]
    assert seegull_country(str(path)) == "MX"
    import_file(writer_db, path, "seegull")
    again = import_file(writer_db, path, "seegull")
    assert again.candidates_new == 0
    assert writer_db["stereo_candidates"].count == 1745


def test_seegull_without_country_in_the_name_needs_the_option(tmp_path, writer_db):
    path = tmp_path / "votes.csv"
    path.write_text("identity,attribute,stereotype,non_stereotype,unsure\nchilangos,arrogantes,3,0,0\n", encoding="utf-8")
    with pytest.raises(StereoImportError, match="--country"):
        import_file(writer_db, path, "seegull")
    result = import_file(writer_db, path, "seegull", country="mx")
    assert result.by_country == {"MX": 1} and result.kept == 1


def test_seegull_wrong_columns_name_the_missing_ones(tmp_path, writer_db):
    path = tmp_path / "x_es_in_MX.csv"
    path.write_text("identity,attr,stereotype\nchilangos,arrogantes,3\n", encoding="utf-8")
    with pytest.raises(StereoImportError) as err:
        import_file(writer_db, path, "seegull")
    message = str(err.value)
    for missing in ("'attribute'", "'non_stereotype'", "'unsure'"):
        assert missing in message
    assert "'identity'" not in message.split("Found")[0]
    assert writer_db["stereo_candidates"].count == 0  # nothing written on a column error


def _write(path, rows, fmt):
    if fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_espanstereo_in_each_file_format(tmp_path, writer_db, fmt):
    path = tmp_path / f"espanstereo.{fmt}"
    _write(path, ESPAN_ROWS, fmt)
    result = import_file(writer_db, path, "espanstereo")
    assert result.rows_read == 3 and result.items_in_file == result.items_new == 2
    assert result.skipped == ((3, "empty Stereotype, Context, Stereotype or Counter-Stereotype Sentence"),)
    items = store.items(writer_db)
    assert sorted(items["country"]) == ["AR", "MX"]
    assert set(items["status"]) == {"approved"} and set(items["dataset"]) == {"EspanStereo"}
    assert sorted(items["category"]) == ["age", "gender"]  # Spanish labels mapped through the catalog aliases
    mx = items[items["country"] == "MX"].iloc[0]
    assert (mx["context"], mx["stereotype_sentence"], mx["counter_sentence"]) == (
        "Mi tía sacó el coche.", "Chocó al aparcar.", "Aparcó a la primera.")


def test_espanstereo_country_option_when_the_file_has_no_country_column(tmp_path, writer_db):
    rows = [{k: val for k, val in r.items() if k != "Country"} for r in ESPAN_ROWS[:2]]
    path = tmp_path / "es.csv"
    _write(path, rows, "csv")
    with pytest.raises(StereoImportError, match="--country"):
        import_file(writer_db, path, "espanstereo")
    result = import_file(writer_db, path, "espanstereo", country="NI")
    assert result.by_country == {"NI": 2}


def test_espanstereo_wrong_columns_name_every_missing_one(tmp_path, writer_db):
    path = tmp_path / "bad.csv"
    path.write_text("Stereotype,Target Group,Context\nx,y,z\n", encoding="utf-8")
    with pytest.raises(StereoImportError) as err:
        import_file(writer_db, path, "espanstereo", country="MX")
    head = str(err.value).split("Found")[0]
    for col in ("Stereotype Category", "Context Sentence", "Stereotype Sentence", "Counter-Stereotype Sentence"):
        assert repr(col) in head
    assert "'Target Group'" not in head
    assert set(ESPANSTEREO_COLUMNS) >= {"Stereotype", "Target Group"}


def test_espanstereo_unknown_country_is_an_error_with_the_fix(tmp_path, writer_db):
    rows = [dict(ESPAN_ROWS[0], Country="Atlantis")]
    path = tmp_path / "x.csv"
    _write(path, rows, "csv")
    with pytest.raises(StereoImportError, match="countries.toml"):
        import_file(writer_db, path, "espanstereo")


def test_generic_csv_with_a_column_map(tmp_path, writer_db):
    path = tmp_path / "mine.csv"
    path.write_text("Grupo;Estereotipo;País;Cat;Ctx;S;C\n"
                    "porteños;Los porteños son arrogantes.;Argentina;origen;Llegó un porteño.;Habló de sí mismo.;Escuchó a todos.\n"
                    "costeños;Los costeños son alegres.;Colombia;origen;;;\n", encoding="utf-8")
    mapping = parse_mapping(["target_group=Grupo", "stereotype=Estereotipo", "country=País", "category=Cat",
                             "context=Ctx", "stereotype_sentence=S", "counter_sentence=C"])
    result = import_file(writer_db, path, "csv", mapping=mapping)
    assert result.candidates_new == 2 and result.items_new == 1 and result.kept is None
    cands = store.candidates(writer_db)
    assert set(cands["keep_rule"]) == {v.RULE_MEDIAN}  # no votes: they go to in-country Likert rating
    assert set(cands["category"]) == {"origin"}
    assert store.items(writer_db)["status"].tolist() == ["draft"]  # waits for an in-country approval


def test_generic_csv_missing_columns_and_bad_map(tmp_path, writer_db):
    path = tmp_path / "mine.csv"
    path.write_text("Estereotipo\nalgo\n", encoding="utf-8")
    with pytest.raises(StereoImportError) as err:
        import_file(writer_db, path, "csv")
    assert "'stereotype' (for stereotype)" in str(err.value) and "'country' (for country)" in str(err.value)
    with pytest.raises(StereoImportError, match="FIELD=COLUMN"):
        parse_mapping(["stereotype"])
    with pytest.raises(StereoImportError, match="unknown field"):
        parse_mapping(["colour=x"])
    result = import_file(writer_db, path, "csv", country="CO", mapping=parse_mapping(["stereotype=Estereotipo"]))
    assert result.by_country == {"CO": 1}


def test_unknown_file_type(tmp_path, writer_db):
    path = tmp_path / "x.xlsx"
    path.write_bytes(b"PK")
    with pytest.raises(StereoImportError, match="unknown file type"):
        import_file(writer_db, path, "espanstereo")


def test_cli_import_prints_what_it_stored(shared_data, tmp_path):
    from monitor.cli import main

    db = tmp_path / "fw.db"
    runner = CliRunner()
    out = runner.invoke(main, ["stereo", "import", str(shared_data / "stereotypes" / SEEGULL["ES"][0]), "--format",
                               "seegull", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "1344 rows read" in out.output and "1344 newly stored" in out.output and "by country: ES 1344" in out.output
    _, kept = _csv_count(shared_data / "stereotypes" / SEEGULL["ES"][0])
    assert f"kept under the keep rule: {kept} of 1344" in out.output
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    out = runner.invoke(main, ["stereo", "import", str(bad), "--format", "espanstereo", "--country", "MX", "--db", str(db)])
    assert out.exit_code != 0 and "missing column(s)" in out.output and "'Stereotype Category'" in out.output
