// Tables for people and programs: one writer for aligned text, markdown, CSV and JSON, used by
// `gridrun report`, `gridrun plan` (its table of jobs) and `gridrun status`. In base/ because the
// status (scheduler/) and the reports (report/) both print tables and neither may depend on the other.
//
// Why tables are built as data first (Table/Cell) and rendered last: the same numbers go to
// people (aligned text wrapped to the terminal width, "mean ±95% CI" cells) and to programs
// (CSV/JSON with the interval in its own `<column>_ci95` column), and golden tests compare both.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace gridrun::base {

struct Cell {
  std::string text;                                         // as shown in table/markdown
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
  // No columns: a paragraph of notes under the title in table/markdown (machine formats give a
  // table with no columns and the notes).
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  // printed under the table
  // Fit::Drop only: the columns that may be left out when the table is too wide, the first one
  // first (the others always show).
  std::vector<std::size_t> drop_order;
  // Fit::Drop only: a column of long free text (status's failure reasons) that is cut to the width
  // the other columns leave, its cells ending in "…", instead of making the line too wide; for the
  // dropping it counts as `shrink_min` columns wide. None by default.
  std::size_t shrink_column = std::numeric_limits<std::size_t>::max();
  std::size_t shrink_min = 24;
  // Rows made on demand instead of stored in `rows` (which then stays empty): `make_row(i, out)`
  // fills row i into `out`, reused between calls, for i = 0..generated_rows-1, once per pass
  // (widths, then printing). Why: plan's table of 100,000 jobs held as cells is ~45 MB that the
  // process first has to fault in; generated, it is one row at a time.
  std::size_t generated_rows = 0;
  std::function<void(std::size_t, std::vector<Cell>&)> make_row;

  std::size_t row_count() const { return make_row ? generated_rows : rows.size(); }
  // Calls fn(index, row) for every row, stored or generated.
  void for_each_row(const std::function<void(std::size_t, const std::vector<Cell>&)>& fn) const;
};

struct TableStyle {
  std::string format = "table";  // table | markdown | csv | json
  int width = 100;               // table/markdown: wrap width
  // How table/markdown fit `width`: Blocks splits a wide table into column blocks that each
  // repeat the first column (report: every figure matters); Drop leaves out Table::drop_order
  // columns until it fits, keeping one line per row, and names them under the rows in
  // "(not shown to fit W columns: a, b, use --format csv)" (plan and status: a row is one job,
  // and their --format csv has every column); Table::shrink_column's cells are cut to fit.
  enum class Fit { Blocks, Drop };
  Fit fit = Fit::Blocks;
  // table: the title with its '=' underline, the '-' rule under the column names and a blank
  // line after; csv: the "# <title>" line. Off for a command's single table (plan, status).
  bool heading = true;
};

// True for the formats render_tables knows.
bool is_table_format(const std::string& format);

// table/markdown: each table aligned (numeric columns to the right), split into column blocks
// that repeat the first column when wider than style.width, notes wrapped underneath.
// csv: one section per table starting with "# <title>"; json: {"tables": [{title, columns, rows,
// notes}]}. In both, a column with intervals is followed by a `<column>_ci95` column.
void render_tables(const std::vector<Table>& tables, const TableStyle& style, std::ostream& out);

}  // namespace gridrun::base
