// page.js: the HTML report's own script (harness/report/report_page.h), compiled into balerbench.
// It sorts a table by the column whose name is clicked, shows a wide table's every column on demand
// (the columns to decide by first), and draws each figure from its Vega-Lite
// specification (in <script id="bb-figures">) with the Vega and Vega-Lite embedded in the page, as
// SVG, with links to save it as SVG or PNG. Nothing is fetched: the page works offline.
//
// For the browser test (tests/integration/report_page_test.py): each <figure> gets data-rendered
// "yes" (or "failed", with the reason in its place and on the console), and <html> data-figures
// "done" once every figure has been tried.
(function () {
  'use strict';

  // A cell's value as stored (data-v holds it as JSON: a number, a text, null), for sorting.
  function cellValue(td) {
    try {
      return JSON.parse(td.getAttribute('data-v'));
    } catch (e) {
      return td.textContent;
    }
  }

  function blank(v) {
    return v === null || v === undefined || v === '-' || v === '';
  }

  // Numbers before texts, numbers by value, texts in natural order ("bs 64" before "bs 512").
  function compareValues(a, b) {
    var an = typeof a === 'number', bn = typeof b === 'number';
    if (an && bn) return a - b;
    if (an !== bn) return an ? -1 : 1;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }

  function sortTable(table, column, th) {
    var descending = th.getAttribute('aria-sort') === 'ascending';
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return {row: row, value: cellValue(row.cells[column]), at: i};
    });
    rows.sort(function (x, y) {
      var bx = blank(x.value), by = blank(y.value);
      if (bx || by) return bx === by ? x.at - y.at : (bx ? 1 : -1);  // blanks last, either way
      var c = compareValues(x.value, y.value);
      return (descending ? -c : c) || x.at - y.at;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.setAttribute('aria-sort', 'none'); });
    th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
  }

  function makeSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.querySelector('button').addEventListener('click', function () { sortTable(table, column, th); });
    });
  }

  // A wide table shows the columns to decide by; its button shows every column, and back.
  function columnChoice(button) {
    var section = button.closest('section.bb-table');
    button.addEventListener('click', function () {
      var all = section.classList.toggle('bb-all-columns');
      button.textContent = button.getAttribute(all ? 'data-few' : 'data-all');
    });
  }

  function saveLinks(figure, view) {
    var holder = figure.querySelector('.bb-save');
    [['svg', 'SVG'], ['png', 'PNG']].forEach(function (kind) {
      var a = document.createElement('a');
      a.href = '#';
      a.textContent = 'Save as ' + kind[1];
      a.addEventListener('click', function (event) {
        event.preventDefault();
        view.toImageURL(kind[0], kind[0] === 'png' ? 2 : 1).then(function (url) {
          var link = document.createElement('a');
          link.href = url;
          link.download = figure.id + '.' + kind[0];
          link.click();
        });
      });
      holder.appendChild(a);
    });
  }

  function failed(figure, error) {
    var plot = figure.querySelector('.bb-plot');
    plot.classList.add('bb-failed-plot');
    plot.textContent = 'This figure could not be drawn: ' + error;
    figure.setAttribute('data-rendered', 'failed');
    console.error('balerbench report: figure ' + figure.id + ': ' + error);
  }

  function draw(item) {
    var figure = document.getElementById(item.id);
    try {
      var compiled = vegaLite.compile(item.spec).spec;
      var view = new vega.View(vega.parse(compiled), {
        renderer: 'svg', container: figure.querySelector('.bb-plot'), hover: true
      });
      return view.runAsync().then(function () {
        figure.setAttribute('data-rendered', 'yes');
        saveLinks(figure, view);
      }, function (error) { failed(figure, error); });
    } catch (error) {
      failed(figure, error);
      return Promise.resolve();
    }
  }

  function drawFigures() {
    var holder = document.getElementById('bb-figures');
    var figures = holder ? JSON.parse(holder.textContent) : [];
    if (figures.length && (typeof vega === 'undefined' || typeof vegaLite === 'undefined')) {
      figures.forEach(function (item) { failed(document.getElementById(item.id), 'the plotting library is missing'); });
      figures = [];
    }
    Promise.all(figures.map(draw)).then(function () {
      document.documentElement.setAttribute('data-figures', 'done');
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll('table.bb-sortable'), makeSortable);
  Array.prototype.forEach.call(document.querySelectorAll('button.bb-columns'), columnChoice);
  drawFigures();
})();
