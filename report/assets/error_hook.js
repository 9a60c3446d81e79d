
window.gridrunErrors = [];
window.addEventListener('error', function (e) { window.gridrunErrors.push(String(e.message || e)); });
(function () {
  var orig = console.error;
  console.error = function () {
    window.gridrunErrors.push(Array.prototype.join.call(arguments, ' '));
    return orig.apply(console, arguments);
  };
})();
