// Tables for people and programs: one writer for aligned text, markdown, CSV and JSON, used by
// `gridrun report` (and open to any command that prints rows: plan, status).
//
// Why tables are built as data first (Table/Cell) and rendered last: the same numbers go to
// people (aligned text wrapped to the terminal width, "mean ±95% CI" cells) and to programs
// (CSV/JSON with the interval in its own `<column>_ci95` column), and golden tests compare both.
#pragma once

#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace gridrun::results {

struct Cell {
  std::string text;                                     // as shown in table/markdown
  double value = std::numeric_limits<double>::quiet_NaN();  // numeric cells: for csv/json
  double ci95 = std::numeric_limits<double>::quiet_NaN();   // half-width of the 95% interval
  bool numeric = false;
};

// A text cell (left-aligned, quoted in CSV/JSON).
Cell text_cell(const std::string& text);
// A numeric cell shown with `precision` decimals ("-" for NaN); CSV/JSON carry the full value.
Cell number_cell(double value, int precision);

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;                        // printed under the table
};

struct TableStyle {
  std::string format = "table";                          // table | markdown | csv | json
  int width = 100;                                       // table/markdown: wrap width
};

// True for the formats render_tables knows.
bool is_table_format(const std::string& format);

// table/markdown: each table aligned (numeric columns to the right), split into column blocks
// that repeat the first column when wider than style.width, notes wrapped underneath.
// csv: one section per table starting with "# <title>"; json: {"tables": [{title, columns, rows,
// notes}]}. In both, a column with intervals is followed by a `<column>_ci95` column.
void render_tables(const std::vector<Table>& tables, const TableStyle& style, std::ostream& out);

}  // namespace gridrun::results
