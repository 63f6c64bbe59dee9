// The Mini App's only script: fetch each page with Telegram's signed initData and show it.
// Links and forms marked data-view are fetched in place; nothing else runs on the page.
(function () {
  "use strict";
  var tg = window.Telegram && window.Telegram.WebApp;
  var view = document.getElementById("view");
  var base = document.body.getAttribute("data-base") || "";
  var initData = tg ? tg.initData : "";
  var chat = "";
  var pending = {};  // the request in flight for the page and for each part: a newer one wins

  function theme() {
    var params = (tg && tg.themeParams) || {};
    var style = document.documentElement.style;
    Object.keys(params).forEach(function (key) {
      style.setProperty("--tg-theme-" + key.replace(/_/g, "-"), params[key]);
    });
    if (tg && tg.colorScheme) document.documentElement.setAttribute("data-scheme", tg.colorScheme);
  }

  function address(url) {
    var full = new URL(url, window.location.href);
    if (chat) full.searchParams.set("chat", chat);
    return full;
  }

  function load(url, options, target) {
    options = options || {};
    var headers = { Authorization: "tma " + initData };
    if (options.body) headers["Content-Type"] = "application/x-www-form-urlencoded";
    var key = target ? target.id : "";
    if (pending[key]) pending[key].abort();
    var controller = new AbortController();
    pending[key] = controller;
    document.body.classList.add("loading");
    return fetch(address(url), {
      method: options.method || "GET", headers: headers, body: options.body,
      signal: controller.signal, credentials: "omit"
    }).then(function (response) {
      return response.text().then(function (html) {
        if (pending[key] !== controller) return;
        pending[key] = null;
        (target || view).innerHTML = html;
        var nav = view.querySelector("[data-chat]");
        if (nav) {
          chat = nav.getAttribute("data-chat");
          document.documentElement.lang = nav.getAttribute("data-lang") || "en";
        }
        if (!target) window.scrollTo(0, 0);
        document.body.classList.remove("loading");
      });
    }).catch(function (error) {
      if (error.name !== "AbortError") document.body.classList.remove("loading");
    });
  }

  function formQuery(form) {
    return new URLSearchParams(new FormData(form)).toString();
  }

  function submit(form) {
    var action = form.getAttribute("action");
    if ((form.getAttribute("method") || "get").toLowerCase() === "post") {
      return load(action, { method: "POST", body: formQuery(form) });
    }
    // A search redraws only its results, so what is being typed stays as it is.
    var target = form.getAttribute("data-target");
    if (target) {
      return load(action + "?" + formQuery(form) + "&part=" + target, {},
                  document.getElementById(target));
    }
    return load(action + "?" + formQuery(form));
  }

  var timer = null;
  function later(work) {
    clearTimeout(timer);
    timer = setTimeout(work, 300);
  }

  document.addEventListener("click", function (event) {
    // Another site opens in Telegram's browser, never inside the Mini App.
    var external = event.target.closest("a[data-external], a[href^='http']");
    if (external && external.origin !== window.location.origin) {
      event.preventDefault();
      if (tg && tg.openLink) tg.openLink(external.href); else window.open(external.href);
      return;
    }
    var link = event.target.closest("a[data-view]");
    if (link) {
      event.preventDefault();
      load(link.getAttribute("href"));
      return;
    }
    var copy = event.target.closest("[data-copy]");
    if (copy && navigator.clipboard) {
      navigator.clipboard.writeText(document.getElementById(copy.getAttribute("data-copy")).textContent);
    }
  });

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-view]");
    if (!form) return;
    event.preventDefault();
    submit(form);
  });

  document.addEventListener("change", function (event) {
    var field = event.target.closest("select[data-auto]");
    if (field) submit(field.form);
  });

  document.addEventListener("input", function (event) {
    var search = event.target.closest("input[data-auto]");
    if (search) {
      later(function () { submit(search.form); });
      return;
    }
    var query = event.target.closest("input[data-preview]");
    if (query) {
      later(function () {
        var target = document.getElementById("preview");
        load(query.getAttribute("data-preview"),
             { method: "POST", body: new URLSearchParams({ query: query.value }).toString() },
             target);
      });
    }
  });

  theme();
  if (!initData) {
    document.getElementById("loading").hidden = true;
    document.getElementById("outside").hidden = false;
    return;
  }
  tg.ready();
  if (tg.expand) tg.expand();
  if (tg.onEvent) tg.onEvent("themeChanged", theme);
  var first = new URLSearchParams(window.location.search).get("page");
  if (!/^(front|library|subscriptions|settings)$/.test(first || "")) first = "front";
  load(base + "/view/" + first);
})();
