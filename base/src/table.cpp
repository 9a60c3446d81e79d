// The table writer (table.hpp): aligned text and markdown wrapped to a width (column blocks that
// repeat the first column), CSV sections and JSON for programs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/json.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::base {

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "null";
  if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Splits column indices 1..n-1 into blocks that fit `width` together with column 0.
std::vector<std::vector<std::size_t>> blocks(const std::vector<std::size_t>& widths, int width, int sep) {
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::size_t> cur = {0};
  int used = static_cast<int>(widths[0]);
  for (std::size_t c = 1; c < widths.size(); ++c) {
    int w = static_cast<int>(widths[c]) + sep;
    if (cur.size() > 1 && used + w > width) {
      out.push_back(cur);
      cur = {0};
      used = static_cast<int>(widths[0]);
    }
    cur.push_back(c);
    used += w;
  }
  out.push_back(cur);
  return out;
}

std::size_t display_width(const std::string& s);

// Word-wraps a note to lines of at most `width` display columns.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::size_t display_width(const std::string& s) {
  // UTF-8: count code points, not bytes ("±" is two bytes, one column).
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Appends `s` padded to `w` display columns (no temporaries: plan prints 100,000 rows this way).
void append_padded(std::string& out, const std::string& s, std::size_t w, bool right) {
  const std::size_t d = display_width(s);
  const std::size_t fill = d >= w ? 0 : w - d;
  if (right) out.append(fill, ' ');
  out += s;
  if (!right) out.append(fill, ' ');
}

// `s` cut to `width` display columns, its last one "…" (code points, as display_width counts).
std::string cut_to(const std::string& s, std::size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {  // a code point starts
      if (n + 1 >= width) break;                              // the last column is the ellipsis's
      ++n;
    }
    out += s[i];
  }
  return out + "…";
}

// Fit::Drop: which columns show, dropping t.drop_order columns until the line fits `width`.
std::vector<bool> fit_by_dropping(const Table& t, const std::vector<std::size_t>& w, int width, int sep) {
  std::vector<bool> show(w.size(), true);
  auto used = [&] {
    int total = -sep;
    for (std::size_t c = 0; c < w.size(); ++c)
      if (show[c]) total += static_cast<int>(w[c]) + sep;
    return total;
  };
  for (std::size_t c : t.drop_order) {
    if (used() <= width) break;
    if (c < show.size()) show[c] = false;
  }
  return show;
}

// Fit::Drop's note: "(not shown to fit W columns: a, b, use --format csv)", words wrapped at
// `width`, continuation lines indented by two spaces.
void hidden_note(const std::vector<std::string>& hidden, int width, std::ostream& out) {
  std::vector<std::string> words;
  for (const auto& h : hidden) words.push_back(h + ",");
  words.push_back("use --format csv)");
  const std::string lead = "(not shown to fit " + std::to_string(width) + " columns:";
  for (const auto& line : base::wrap_words(lead, words, static_cast<std::size_t>(width), "  "))
    out << line << '\n';
}

void render_text(const Table& t, const TableStyle& style, std::ostream& out) {
  const int width = style.width;
  const bool markdown = style.format == "markdown";
  std::size_t n = t.columns.size();
  if (n == 0) {  // a table of notes only: a paragraph under its title (a report's verdict)
    if (style.heading)
      out << (markdown ? "### " : "") << t.title << "\n"
          << (markdown ? "\n"
                       : std::string(std::min<std::size_t>(display_width(t.title), width), '=') + "\n");
    for (const auto& note : t.notes)
      for (const auto& l : wrap(note, static_cast<std::size_t>(width))) out << l << "\n";
    if (style.heading) out << "\n";
    return;
  }
  std::vector<std::size_t> w(n);
  std::vector<bool> right(n, true);
  for (std::size_t c = 0; c < n; ++c) {
    w[c] = display_width(t.columns[c]);
    right[c] = t.row_count() > 0;
  }
  t.for_each_row([&](std::size_t, const std::vector<Cell>& r) {
    for (std::size_t c = 0; c < n; ++c) {
      w[c] = std::max(w[c], display_width(r[c].text));
      if (!r[c].numeric && r[c].text != "-") right[c] = false;
    }
  });
  int sep = markdown ? 3 : 2;
  std::vector<std::vector<std::size_t>> bl;
  std::vector<std::string> hidden_names;
  const std::size_t shrink = style.fit == TableStyle::Fit::Drop && t.shrink_column < n ? t.shrink_column : n;
  if (style.fit == TableStyle::Fit::Drop) {
    const int room = width - (markdown ? 4 : 0);
    std::vector<std::size_t> fit_w = w;
    if (shrink < n)
      fit_w[shrink] = std::min(w[shrink], std::max(t.shrink_min, display_width(t.columns[shrink])));
    const auto show = fit_by_dropping(t, fit_w, room, sep);
    bl.emplace_back();
    for (std::size_t c = 0; c < n; ++c) {
      if (show[c])
        bl.back().push_back(c);
      else
        hidden_names.push_back(t.columns[c]);
    }
    // The shrinkable column gets what the shown others leave, at least its minimum.
    if (shrink < n && show[shrink]) {
      int others = 0;
      for (std::size_t c : bl.back())
        if (c != shrink) others += static_cast<int>(w[c]) + sep;
      const int left = std::max(room - others, 0);
      w[shrink] = std::min(w[shrink], std::max(fit_w[shrink], static_cast<std::size_t>(left)));
    }
  } else {
    bl = blocks(w, width - (markdown ? 4 : 0), sep);
  }
  std::string title = t.title + (bl.size() > 1 ? " (" + std::to_string(bl.size()) + " parts)" : "");
  if (style.heading) {
    out << (markdown ? "### " : "") << title << "\n";
    if (!markdown)
      out << std::string(std::min<std::size_t>(display_width(title), width), '=') << "\n";
    else
      out << "\n";
  }
  for (std::size_t b = 0; b < bl.size(); ++b) {
    const auto& cols = bl[b];
    if (b > 0) out << "\n";
    std::string s;  // one line, reused
    auto line = [&](auto&& cell_text) {
      s.assign(markdown ? "| " : "");
      for (std::size_t k = 0; k < cols.size(); ++k) {
        std::size_t c = cols[k];
        if (k) s += markdown ? " | " : "  ";
        append_padded(s, cell_text(c), w[c], right[c]);
      }
      if (markdown)
        s += " |";
      else
        while (!s.empty() && s.back() == ' ') s.pop_back();
      s += '\n';
      out.write(s.data(), static_cast<std::streamsize>(s.size()));
    };
    line([&](std::size_t c) -> const std::string& { return t.columns[c]; });
    if (markdown) {
      std::string rule = "|";
      for (std::size_t c : cols) rule += " " + std::string(w[c] - 1, '-') + (right[c] ? ":" : "-") + " |";
      out << rule << "\n";
    } else if (style.heading) {
      line([&](std::size_t c) { return std::string(w[c], '-'); });
    }
    std::string cut;  // a cell of the shrinkable column, cut to its width
    t.for_each_row([&](std::size_t, const std::vector<Cell>& r) {
      line([&](std::size_t c) -> const std::string& {
        if (c != shrink || display_width(r[c].text) <= w[c]) return r[c].text;
        cut = cut_to(r[c].text, w[c]);
        return cut;
      });
    });
  }
  if (!hidden_names.empty()) hidden_note(hidden_names, width, out);
  if (!t.notes.empty()) out << (markdown ? "\n" : "");
  for (const auto& note : t.notes) {
    std::string text = markdown ? "_" + note + "_" : note;
    for (const auto& l : wrap(text, static_cast<std::size_t>(width) - 2))
      out << (markdown ? "" : "  ") << l << "\n";
  }
  if (style.heading) out << "\n";
}

// Machine formats: a numeric column with intervals gets a `<name>_ci95` column after it.
std::vector<std::pair<std::string, int>> machine_columns(const Table& t) {
  std::vector<std::pair<std::string, int>> cols;  // name, (column index << 1) | is_ci
  std::vector<bool> has_ci(t.columns.size(), false);
  t.for_each_row([&](std::size_t, const std::vector<Cell>& r) {
    for (std::size_t c = 0; c < has_ci.size(); ++c) has_ci[c] = has_ci[c] || !std::isnan(r[c].ci95);
  });
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    cols.emplace_back(t.columns[c], static_cast<int>(c << 1));
    if (has_ci[c]) cols.emplace_back(t.columns[c] + "_ci95", static_cast<int>((c << 1) | 1));
  }
  return cols;
}

std::string csv_value(const Cell& cell, bool ci) {
  if (ci) return std::isnan(cell.ci95) ? "" : number(cell.ci95);
  if (cell.numeric) return std::isnan(cell.value) ? "" : number(cell.value);
  return csv_quote(cell.text);
}

void render_csv(const std::vector<Table>& tables, bool heading, std::ostream& out) {
  bool first = true;
  for (const auto& t : tables) {
    if (!first) out << "\n";
    first = false;
    if (heading) out << "# " << t.title << "\n";
    auto cols = machine_columns(t);
    for (std::size_t k = 0; k < cols.size(); ++k) out << (k ? "," : "") << base::csv_quote(cols[k].first);
    out << "\n";
    t.for_each_row([&](std::size_t, const std::vector<Cell>& r) {
      for (std::size_t k = 0; k < cols.size(); ++k)
        out << (k ? "," : "") << csv_value(r[cols[k].second >> 1], cols[k].second & 1);
      out << "\n";
    });
  }
}

// Every value through base::Json; one row per line, so that goldens diff by row.
void render_json(const std::vector<Table>& tables, std::ostream& out) {
  out << "{\"tables\": [";
  for (std::size_t ti = 0; ti < tables.size(); ++ti) {
    const Table& t = tables[ti];
    const auto cols = machine_columns(t);
    Json names = Json::array();
    for (const auto& c : cols) names.push_back(c.first);
    out << (ti ? ",\n " : "\n ") << "{\"title\": " << dump_line(t.title)
        << ", \"columns\": " << dump_line(names) << ",\n  \"rows\": [";
    t.for_each_row([&](std::size_t ri, const std::vector<Cell>& r) {
      Json row = Json::object();
      for (const auto& [name, at] : cols) {
        const Cell& cell = r[static_cast<std::size_t>(at >> 1)];
        const bool ci = at & 1;
        append_new_member(
            row, name, ci || cell.numeric ? json_number(ci ? cell.ci95 : cell.value, 10) : Json(cell.text));
      }
      out << (ri ? ",\n   " : "\n   ") << dump_line(row);
    });
    out << "],\n  \"notes\": " << dump_line(Json(t.notes)) << "}";
  }
  out << "\n]}\n";
}

}  // namespace

void Table::for_each_row(const std::function<void(std::size_t, const std::vector<Cell>&)>& fn) const {
  if (!make_row) {
    for (std::size_t i = 0; i < rows.size(); ++i) fn(i, rows[i]);
    return;
  }
  std::vector<Cell> row;
  for (std::size_t i = 0; i < generated_rows; ++i) {
    row.clear();
    make_row(i, row);
    fn(i, row);
  }
}

Cell text_cell(const std::string& text) { return Cell{text, std::nan(""), std::nan(""), false}; }

Cell number_cell(double value, int precision) {
  if (std::isnan(value)) return Cell{"-", value, std::nan(""), true};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", precision, value);
  return Cell{buf, value, std::nan(""), true};
}

bool is_table_format(const std::string& format) {
  return format == "table" || format == "markdown" || format == "csv" || format == "json";
}

void render_tables(const std::vector<Table>& tables, const TableStyle& style, std::ostream& out) {
  if (style.format == "table" || style.format == "markdown") {
    for (const auto& t : tables) render_text(t, style, out);
  } else if (style.format == "csv") {
    render_csv(tables, style.heading, out);
  } else if (style.format == "json") {
    render_json(tables, out);
  } else {
    throw std::invalid_argument("table format " + style.format + ": expected table, markdown, csv or json");
  }
}

}  // namespace gridrun::base
