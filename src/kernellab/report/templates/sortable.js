/* Sortable tables: click (or Enter on) a header to sort by it; again to reverse. Numbers sort by value,
   text alphabetically; cells without a value always sort last. A link ending in
   #sort=<table>:<column>:<asc|desc> opens with that table sorted.
   Column pickers: the "columns" list above a table shows or hides each of its columns; a link ending
   in #hide=<table>:<column>,<column> opens with those hidden (several parts joined by "&"). */
(function () {
  "use strict";
  var body = document.body;
  window.addEventListener("error", function (e) {
    body.setAttribute("data-report-errors", String(e.message || e));
  });
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  function value(cell, numeric) {
    var v = cell ? cell.getAttribute("data-v") : null;
    if (v === null || v === "") { return null; }
    if (!numeric) { return v; }
    var x = parseFloat(v);
    return isNaN(x) ? null : x;
  }
  function sortTable(table, index, dir) {
    var header = table.tHead.rows[0].cells[index];
    var numeric = header.getAttribute("data-type") === "num";
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = value(a.cells[index], numeric), y = value(b.cells[index], numeric);
      if (x === null) { return y === null ? 0 : 1; }
      if (y === null) { return -1; }
      var c = numeric ? x - y : x.localeCompare(y);
      return dir === "asc" ? c : -c;
    });
    each(rows, function (r) { tbody.appendChild(r); });
    each(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    table.setAttribute("data-sorted", header.getAttribute("data-key") + ":" + dir);
  }
  function init(table) {
    each(table.tHead.rows[0].cells, function (header, index) {
      header.tabIndex = 0;
      function activate() {
        var current = header.getAttribute("aria-sort");
        var first = header.getAttribute("data-type") === "num" ? "desc" : "asc";
        var dir = current ? (current === "ascending" ? "desc" : "asc") : first;
        sortTable(table, index, dir);
      }
      header.addEventListener("click", activate);
      header.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); activate(); }
      });
    });
  }
  function sortFromHash() {
    var m = /(?:^#|&)sort=([^&]+)/.exec(window.location.hash);
    if (!m) { return; }
    var parts = decodeURIComponent(m[1]).split(":");
    if (parts.length < 3) { return; }
    var dir = parts.pop(), id = parts.shift(), key = parts.join(":");
    var table = document.getElementById("t-" + id);
    if (!table || (dir !== "asc" && dir !== "desc")) { return; }
    each(table.tHead.rows[0].cells, function (header, index) {
      if (header.getAttribute("data-key") === key) { sortTable(table, index, dir); }
    });
  }
  function showColumn(table, index, shown) {
    each(table.rows, function (row) {
      if (row.cells[index]) { row.cells[index].style.display = shown ? "" : "none"; }
    });
    var hidden = [];
    each(table.tHead.rows[0].cells, function (h) {
      if (h.style.display === "none") { hidden.push(h.getAttribute("data-key")); }
    });
    table.setAttribute("data-hidden", hidden.join(","));
  }
  function picker(table) {
    var box = document.querySelector("details.columns[data-for='" + table.id + "']");
    if (!box) { return; }
    each(table.tHead.rows[0].cells, function (header, index) {
      var label = document.createElement("label");
      var tick = document.createElement("input");
      tick.type = "checkbox";
      tick.checked = true;
      tick.setAttribute("data-key", header.getAttribute("data-key"));
      tick.addEventListener("change", function () { showColumn(table, index, tick.checked); });
      label.appendChild(tick);
      label.appendChild(document.createTextNode(" " + header.textContent));
      box.appendChild(label);
    });
  }
  function hideFromHash() {
    var re = /(?:^#|&)hide=([^&]+)/g, m;
    while ((m = re.exec(window.location.hash)) !== null) {
      var parts = decodeURIComponent(m[1]).split(":");
      var table = document.getElementById("t-" + parts.shift());
      if (!table) { continue; }
      var keys = parts.join(":").split(",");
      each(table.tHead.rows[0].cells, function (header, index) {
        var hide = keys.indexOf(header.getAttribute("data-key")) >= 0;
        if (!hide) { return; }
        showColumn(table, index, false);
        var tick = document.querySelector("details.columns[data-for='" + table.id + "'] input[data-key='" +
                                          header.getAttribute("data-key") + "']");
        if (tick) { tick.checked = false; }
      });
    }
  }
  var tables = document.querySelectorAll("table.sortable");
  each(tables, init);
  each(tables, picker);
  sortFromHash();
  hideFromHash();
  window.addEventListener("hashchange", function () { sortFromHash(); hideFromHash(); });
  body.setAttribute("data-sortable-tables", String(tables.length));
  body.setAttribute("data-report-ready", "1");
}());
