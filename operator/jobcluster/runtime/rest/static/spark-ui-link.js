/*
 * jobcluster: on a running job's pages of Flink's web dashboard, a link to Spark's own UI of the job's program,
 * which the job cluster's REST endpoint serves under spark/ (runtime/rest/spark_ui.py).
 *
 * Flink's dashboard writes every name as text, so the link is an element of its own, outside the dashboard's
 * Angular root, shown while the route is a running job's (#/job/running/<id>/...). The dashboard changes its route
 * with history.pushState, which fires no event, so the route is also looked at twice a second. The link is
 * relative, as the dashboard's own requests are, so it works under any path (YARN's web proxy too).
 */
(function () {
  "use strict";
  var RUNNING_JOB = /^#\/job\/running\/[0-9a-fA-F]{32}(\/|\?|$)/;
  var link = document.createElement("a");
  link.id = "jobcluster-spark-ui";
  link.href = "spark/";
  link.textContent = "Spark UI";
  link.title = "Spark's own web UI of this job's program";
  link.style.cssText = [
    // in the middle of the dashboard's header bar, which is empty there at any width of its menu
    "position:fixed", "top:16px", "left:50%", "transform:translateX(-50%)", "z-index:1000", "display:none", "padding:4px 15px",
    "border-radius:2px", "background:#1890ff", "color:#fff", "font-size:14px", "line-height:1.5715",
    "text-decoration:none", "box-shadow:0 2px 8px rgba(0,0,0,.15)"
  ].join(";");
  document.body.appendChild(link);

  function update() {
    link.style.display = RUNNING_JOB.test(window.location.hash) ? "block" : "none";
  }

  window.addEventListener("hashchange", update);
  window.addEventListener("popstate", update);
  window.setInterval(update, 500);
  update();
})();
