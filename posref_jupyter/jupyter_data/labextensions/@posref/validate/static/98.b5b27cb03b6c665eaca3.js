"use strict";
(Array.isArray(self["webpackChunk_posref_validate"]) ? self["webpackChunk_posref_validate"] : (self["webpackChunk_posref_validate"] = [])).push([[98],{

/***/ 361
(module, __webpack_exports__, __webpack_require__) {

/* harmony import */ var _node_modules_css_loader_dist_runtime_noSourceMaps_js__WEBPACK_IMPORTED_MODULE_0__ = __webpack_require__(601);
/* harmony import */ var _node_modules_css_loader_dist_runtime_noSourceMaps_js__WEBPACK_IMPORTED_MODULE_0___default = /*#__PURE__*/__webpack_require__.n(_node_modules_css_loader_dist_runtime_noSourceMaps_js__WEBPACK_IMPORTED_MODULE_0__);
/* harmony import */ var _node_modules_css_loader_dist_runtime_api_js__WEBPACK_IMPORTED_MODULE_1__ = __webpack_require__(314);
/* harmony import */ var _node_modules_css_loader_dist_runtime_api_js__WEBPACK_IMPORTED_MODULE_1___default = /*#__PURE__*/__webpack_require__.n(_node_modules_css_loader_dist_runtime_api_js__WEBPACK_IMPORTED_MODULE_1__);
// Imports


var ___CSS_LOADER_EXPORT___ = _node_modules_css_loader_dist_runtime_api_js__WEBPACK_IMPORTED_MODULE_1___default()((_node_modules_css_loader_dist_runtime_noSourceMaps_js__WEBPACK_IMPORTED_MODULE_0___default()));
// Module
___CSS_LOADER_EXPORT___.push([module.id, `/* The course's Assignment List (assignments.js), in JupyterLab's own colours and sizes */
.posref-assignments {
  overflow-y: auto;
  padding: 8px 16px;
  font-size: var(--jp-ui-font-size1);
  color: var(--jp-ui-font-color1);
}

.posref-assignments-bar {
  display: flex;
  justify-content: flex-end;
  gap: 8px;
  align-items: center;
}

.posref-assignments-bar label {
  margin-right: auto;
}

.posref-assignments section {
  border: var(--jp-border-width) solid var(--jp-border-color2);
  border-radius: 4px;
  margin: 12px 0;
}

.posref-assignments h2 {
  margin: 0;
  padding: 6px 10px;
  font-size: var(--jp-ui-font-size2);
  background: var(--jp-layout-color2);
  border-bottom: var(--jp-border-width) solid var(--jp-border-color2);
}

.posref-assignments-items {
  padding: 4px 10px;
}

.posref-assignments-empty,
.posref-assignments-loading {
  color: var(--jp-ui-font-color2);
}

.posref-assignments-error {
  color: var(--jp-error-color1);
}

.posref-assignment-row {
  display: flex;
  align-items: center;
  justify-content: space-between;
  padding: 4px 0;
}

.posref-assignment-name {
  font-weight: 600;
}

.posref-assignment-notebooks,
.posref-assignment-submissions {
  margin: 0 0 6px;
  padding-left: 20px;
}

.posref-assignment-notebook {
  display: flex;
  align-items: center;
  justify-content: space-between;
  padding: 2px 0;
}

.posref-assignment-validate.posref-passed {
  background: var(--jp-success-color1);
  color: white;
}

.posref-assignment-validate.posref-failed {
  background: var(--jp-error-color1);
  color: white;
}
`, ""]);
// Exports
/* harmony default export */ const __WEBPACK_DEFAULT_EXPORT__ = (___CSS_LOADER_EXPORT___);

/* harmony export */ __webpack_require__.d(__webpack_exports__, [
/* harmony export */   "A", 0, __WEBPACK_DEFAULT_EXPORT__
/* harmony export */ ]);


/***/ },

/***/ 314
(module) {



/*
  MIT License http://www.opensource.org/licenses/mit-license.php
  Author Tobias Koppers @sokra
*/
module.exports = function (cssWithMappingToString) {
  var list = [];

  // return the list of modules as css string
  list.toString = function toString() {
    return this.map(function (item) {
      var content = "";
      var needLayer = typeof item[5] !== "undefined";
      if (item[4]) {
        content += "@supports (".concat(item[4], ") {");
      }
      if (item[2]) {
        content += "@media ".concat(item[2], " {");
      }
      if (needLayer) {
        content += "@layer".concat(item[5].length > 0 ? " ".concat(item[5]) : "", " {");
      }
      content += cssWithMappingToString(item);
      if (needLayer) {
        content += "}";
      }
      if (item[2]) {
        content += "}";
      }
      if (item[4]) {
        content += "}";
      }
      return content;
    }).join("");
  };

  // import a list of modules into the list
  list.i = function i(modules, media, dedupe, supports, layer) {
    if (typeof modules === "string") {
      modules = [[null, modules, undefined]];
    }
    var alreadyImportedModules = {};
    if (dedupe) {
      for (var k = 0; k < this.length; k++) {
        var id = this[k][0];
        if (id != null) {
          alreadyImportedModules[id] = true;
        }
      }
    }
    for (var _k = 0; _k < modules.length; _k++) {
      var item = [].concat(modules[_k]);
      if (dedupe && alreadyImportedModules[item[0]]) {
        continue;
      }
      if (typeof layer !== "undefined") {
        if (typeof item[5] === "undefined") {
          item[5] = layer;
        } else {
          item[1] = "@layer".concat(item[5].length > 0 ? " ".concat(item[5]) : "", " {").concat(item[1], "}");
          item[5] = layer;
        }
      }
      if (media) {
        if (!item[2]) {
          item[2] = media;
        } else {
          item[1] = "@media ".concat(item[2], " {").concat(item[1], "}");
          item[2] = media;
        }
      }
      if (supports) {
        if (!item[4]) {
          item[4] = "".concat(supports);
        } else {
          item[1] = "@supports (".concat(item[4], ") {").concat(item[1], "}");
          item[4] = supports;
        }
      }
      list.push(item);
    }
  };
  return list;
};

/***/ },

/***/ 601
(module) {



module.exports = function (i) {
  return i[1];
};

/***/ },

/***/ 98
(__unused_webpack_module, __webpack_exports__, __webpack_require__) {

// ESM COMPAT FLAG
__webpack_require__.r(__webpack_exports__);

// EXPORTS
__webpack_require__.d(__webpack_exports__, {
  "default": () => (/* binding */ src)
});

// MODULE: ./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js
var injectStylesIntoStyleTag_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


var stylesInDOM = [];
function getIndexByIdentifier(identifier) {
  var result = -1;
  for (var i = 0; i < stylesInDOM.length; i++) {
    if (stylesInDOM[i].identifier === identifier) {
      result = i;
      break;
    }
  }
  return result;
}
function modulesToDom(list, options) {
  var idCountMap = {};
  var identifiers = [];
  for (var i = 0; i < list.length; i++) {
    var item = list[i];
    var id = options.base ? item[0] + options.base : item[0];
    var count = idCountMap[id] || 0;
    var identifier = "".concat(id, " ").concat(count);
    idCountMap[id] = count + 1;
    var indexByIdentifier = getIndexByIdentifier(identifier);
    var obj = {
      css: item[1],
      media: item[2],
      sourceMap: item[3],
      supports: item[4],
      layer: item[5]
    };
    if (indexByIdentifier !== -1) {
      stylesInDOM[indexByIdentifier].references++;
      stylesInDOM[indexByIdentifier].updater(obj);
    } else {
      var updater = addElementStyle(obj, options);
      options.byIndex = i;
      stylesInDOM.splice(i, 0, {
        identifier: identifier,
        updater: updater,
        references: 1
      });
    }
    identifiers.push(identifier);
  }
  return identifiers;
}
function addElementStyle(obj, options) {
  var api = options.domAPI(options);
  api.update(obj);
  var updater = function updater(newObj) {
    if (newObj) {
      if (newObj.css === obj.css && newObj.media === obj.media && newObj.sourceMap === obj.sourceMap && newObj.supports === obj.supports && newObj.layer === obj.layer) {
        return;
      }
      api.update(obj = newObj);
    } else {
      api.remove();
    }
  };
  return updater;
}
module.exports = function (list, options) {
  options = options || {};
  list = list || [];
  var lastIdentifiers = modulesToDom(list, options);
  return function update(newList) {
    newList = newList || [];
    for (var i = 0; i < lastIdentifiers.length; i++) {
      var identifier = lastIdentifiers[i];
      var index = getIndexByIdentifier(identifier);
      stylesInDOM[index].references--;
    }
    var newLastIdentifiers = modulesToDom(newList, options);
    for (var _i = 0; _i < lastIdentifiers.length; _i++) {
      var _identifier = lastIdentifiers[_i];
      var _index = getIndexByIdentifier(_identifier);
      if (stylesInDOM[_index].references === 0) {
        stylesInDOM[_index].updater();
        stylesInDOM.splice(_index, 1);
      }
    }
    lastIdentifiers = newLastIdentifiers;
  };
};
});

// MODULE: ./node_modules/style-loader/dist/runtime/insertBySelector.js
var insertBySelector_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


var memo = {};

/* istanbul ignore next  */
function getTarget(target) {
  if (typeof memo[target] === "undefined") {
    var styleTarget = document.querySelector(target);

    // Special case to return head of iframe instead of iframe itself
    if (window.HTMLIFrameElement && styleTarget instanceof window.HTMLIFrameElement) {
      try {
        // This will throw an exception if access to iframe is blocked
        // due to cross-origin restrictions
        styleTarget = styleTarget.contentDocument.head;
      } catch (e) {
        // istanbul ignore next
        styleTarget = null;
      }
    }
    memo[target] = styleTarget;
  }
  return memo[target];
}

/* istanbul ignore next  */
function insertBySelector(insert, style) {
  var target = getTarget(insert);
  if (!target) {
    throw new Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");
  }
  target.appendChild(style);
}
module.exports = insertBySelector;
});

// MODULE: ./node_modules/style-loader/dist/runtime/insertStyleElement.js
var insertStyleElement_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


/* istanbul ignore next  */
function insertStyleElement(options) {
  var element = document.createElement("style");
  options.setAttributes(element, options.attributes);
  options.insert(element, options.options);
  return element;
}
module.exports = insertStyleElement;
});

// MODULE: ./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js
var setAttributesWithoutAttributes_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


/* istanbul ignore next  */
function setAttributesWithoutAttributes(styleElement) {
  var nonce =  true ? __webpack_require__.nc : 0;
  if (nonce) {
    styleElement.setAttribute("nonce", nonce);
  }
}
module.exports = setAttributesWithoutAttributes;
});

// MODULE: ./node_modules/style-loader/dist/runtime/styleDomAPI.js
var styleDomAPI_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


/* istanbul ignore next  */
function apply(styleElement, options, obj) {
  var css = "";
  if (obj.supports) {
    css += "@supports (".concat(obj.supports, ") {");
  }
  if (obj.media) {
    css += "@media ".concat(obj.media, " {");
  }
  var needLayer = typeof obj.layer !== "undefined";
  if (needLayer) {
    css += "@layer".concat(obj.layer.length > 0 ? " ".concat(obj.layer) : "", " {");
  }
  css += obj.css;
  if (needLayer) {
    css += "}";
  }
  if (obj.media) {
    css += "}";
  }
  if (obj.supports) {
    css += "}";
  }
  var sourceMap = obj.sourceMap;
  if (sourceMap && typeof btoa !== "undefined") {
    css += "\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(sourceMap)))), " */");
  }

  // For old IE
  /* istanbul ignore if  */
  options.styleTagTransform(css, styleElement, options.options);
}
function removeStyleElement(styleElement) {
  // istanbul ignore if
  if (styleElement.parentNode === null) {
    return false;
  }
  styleElement.parentNode.removeChild(styleElement);
}

/* istanbul ignore next  */
function domAPI(options) {
  if (typeof document === "undefined") {
    return {
      update: function update() {},
      remove: function remove() {}
    };
  }
  var styleElement = options.insertStyleElement(options);
  return {
    update: function update(obj) {
      apply(styleElement, options, obj);
    },
    remove: function remove() {
      removeStyleElement(styleElement);
    }
  };
}
module.exports = domAPI;
});

// MODULE: ./node_modules/style-loader/dist/runtime/styleTagTransform.js
var styleTagTransform_namespaceFn = /*#__PURE__*/__webpack_require__.cw((module) => {


/* istanbul ignore next  */
function styleTagTransform(css, styleElement) {
  if (styleElement.styleSheet) {
    styleElement.styleSheet.cssText = css;
  } else {
    while (styleElement.firstChild) {
      styleElement.removeChild(styleElement.firstChild);
    }
    styleElement.appendChild(document.createTextNode(css));
  }
}
module.exports = styleTagTransform;
});

// EXTERNAL MODULE: consume shared module (default) @jupyterlab/apputils@^4.7.6 (singleton)
var apputils_4_7_singleton_ = __webpack_require__(237);
// EXTERNAL MODULE: consume shared module (default) @jupyterlab/application@^4.6.6 (singleton)
var application_4_6_singleton_ = __webpack_require__(112);
// EXTERNAL MODULE: consume shared module (default) @jupyterlab/mainmenu@^4.6.6 (singleton)
var mainmenu_4_6_singleton_ = __webpack_require__(591);
// EXTERNAL MODULE: consume shared module (default) @lumino/widgets@^2.3.1-alpha.1 (singleton)
var widgets_2_3_1_alpha_singleton_ = __webpack_require__(247);
// EXTERNAL MODULE: consume shared module (default) @jupyterlab/coreutils@^6.6.6 (singleton)
var coreutils_6_6_singleton_ = __webpack_require__(4);
// EXTERNAL MODULE: consume shared module (default) @jupyterlab/services@^7.6.6 (singleton)
var services_7_6_singleton_ = __webpack_require__(691);
;// ./src/validation.js
// What the course's two Validate buttons share (the notebook toolbar's, button.js, and each notebook's in the
// Assignment List, assignments.js): the words the page holds, the request to nbgrader's server extension
// (POST assignments/validate: the notebook from the top in a fresh kernel, then its checks) and the dialog that shows
// its answer. Every word shown is one the server extension posref_jupyter.validate put in the page
// (`posrefValidate`), from posref's catalogs; this file holds none.





/** The words the page config holds under `option` (a server extension put them there), or null where it has none. */
function pageWords(option) {
  const words = coreutils_6_6_singleton_.PageConfig.getOption(option);
  if (!words) {
    return null;
  }
  return typeof words === 'string' ? JSON.parse(words) : words;
}

/** `text` with each `{name}` replaced by `fields[name]`. */
function fill(text, fields) {
  return text.replace(/\{(\w+)\}/g, (field, name) => (name in fields ? String(fields[name]) : field));
}

function validation_element(tag, text, className) {
  const node = document.createElement(tag);
  node.textContent = text;
  if (className) {
    node.className = className;
  }
  return node;
}

/** nbgrader's JSON answer to `body` POSTed (or a GET where `body` is undefined) at `route` of the server. */
async function request(route, body) {
  const settings = services_7_6_singleton_.ServerConnection.makeSettings();
  const url = coreutils_6_6_singleton_.URLExt.join(settings.baseUrl, route);
  const init = body === undefined ? { method: 'GET' } : { method: 'POST', body: JSON.stringify(body) };
  const response = await services_7_6_singleton_.ServerConnection.makeRequest(url, init, settings);
  const reply = await response.json();
  if (!response.ok) {
    throw new services_7_6_singleton_.ServerConnection.ResponseError(response, reply.message);
  }
  return reply;
}

/**
 * The dialog's body for nbgrader's `reply`, and whether every check passed. nbgrader's value says one of: a cell
 * whose type was changed (`type_changed`: nbgrader refuses the notebook before it runs it), a locked cell whose
 * source was changed (`changed`), the graded cells that failed (`failed`: each one's source, and its error as HTML,
 * which nbgrader's ansi2html escaped), or nothing: every check passed. A failure nbgrader words itself (a written
 * answer left empty) is said in the edition's language.
 */
function results(reply, words) {
  const body = document.createElement('div');
  body.className = 'posref-validation';
  if (reply.success !== true) {
    body.append(validation_element('p', words.error), validation_element('pre', String(reply.value)));
    return { body, passed: false };
  }
  const value = typeof reply.value === 'string' ? JSON.parse(reply.value) : reply.value;
  if (value.type_changed !== undefined) {
    for (const cell of value.type_changed) {
      // nbgrader's names: old_type is the cell's type now, new_type the one its metadata recorded at release
      const said = words.type_changed[cell.new_type][cell.old_type];
      body.append(validation_element('p', said), validation_element('pre', cell.source));
    }
    return { body, passed: false };
  }
  if (value.changed !== undefined) {
    for (const cell of value.changed) {
      body.append(validation_element('p', words.changed), validation_element('pre', cell.source));
    }
    return { body, passed: false };
  }
  if (value.failed !== undefined) {
    body.append(validation_element('p', fill(words.failed, { count: value.failed.length })));
    for (const cell of value.failed) {
      const error = document.createElement('pre');
      const nbgraderSaid = words.nbgrader[cell.raw_error.trim()];
      if (nbgraderSaid) {
        error.textContent = nbgraderSaid;
      } else {
        error.innerHTML = cell.error;
      }
      const output = document.createElement('div');
      output.className = 'jp-RenderedText posref-validation-error';
      output.append(error);
      body.append(validation_element('p', words.cell_failed), validation_element('pre', cell.source), output);
    }
    return { body, passed: false };
  }
  body.append(validation_element('p', words.passed));
  return { body, passed: true };
}

/** A dialog titled `title` showing `body` (a sentence or a widget), with the edition's OK. */
function tell(title, body, words) {
  return new apputils_4_7_singleton_.Dialog({ title, body, buttons: [apputils_4_7_singleton_.Dialog.okButton({ label: words.ok })] }).launch();
}

/**
 * Validate the saved notebook at `path` (relative to the server's root) and show what nbgrader found; `say(label,
 * enabled)` shows the button's state meanwhile. -> whether every check passed (false where it could not run).
 */
async function validateAndShow(path, words, say) {
  say(words.validating, false);
  let reply;
  try {
    reply = await request('assignments/validate', { path });
  } catch (error) {
    say(words.validate, true);
    await tell(words.failed_title, fill(words.cannot_validate, { error }), words);
    return false;
  }
  say(words.validate, true);
  const { body, passed } = results(reply, words);
  await tell(words.title, new widgets_2_3_1_alpha_singleton_.Widget({ node: body }), words);
  return passed;
}

;// ./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js
injectStylesIntoStyleTag_namespaceFn();

function injectStylesIntoStyleTag_default() { return injectStylesIntoStyleTag_default.c || (injectStylesIntoStyleTag_default.c = __webpack_require__.n(injectStylesIntoStyleTag_namespaceFn())); }
;// ./node_modules/style-loader/dist/runtime/styleDomAPI.js
styleDomAPI_namespaceFn();

function styleDomAPI_default() { return styleDomAPI_default.c || (styleDomAPI_default.c = __webpack_require__.n(styleDomAPI_namespaceFn())); }
;// ./node_modules/style-loader/dist/runtime/insertBySelector.js
insertBySelector_namespaceFn();

function insertBySelector_default() { return insertBySelector_default.c || (insertBySelector_default.c = __webpack_require__.n(insertBySelector_namespaceFn())); }
;// ./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js
setAttributesWithoutAttributes_namespaceFn();

function setAttributesWithoutAttributes_default() { return setAttributesWithoutAttributes_default.c || (setAttributesWithoutAttributes_default.c = __webpack_require__.n(setAttributesWithoutAttributes_namespaceFn())); }
;// ./node_modules/style-loader/dist/runtime/insertStyleElement.js
insertStyleElement_namespaceFn();

function insertStyleElement_default() { return insertStyleElement_default.c || (insertStyleElement_default.c = __webpack_require__.n(insertStyleElement_namespaceFn())); }
;// ./node_modules/style-loader/dist/runtime/styleTagTransform.js
styleTagTransform_namespaceFn();

function styleTagTransform_default() { return styleTagTransform_default.c || (styleTagTransform_default.c = __webpack_require__.n(styleTagTransform_namespaceFn())); }
// EXTERNAL MODULE: ./node_modules/css-loader/dist/cjs.js!./src/assignments.css
var assignments = __webpack_require__(361);
;// ./src/assignments.css

      
      
      
      
      
      
      
      
      

var assignments_options = {};

assignments_options.styleTagTransform = (styleTagTransform_default()());
assignments_options.setAttributes = (setAttributesWithoutAttributes_default()());

      assignments_options.insert = (insertBySelector_default()().bind)(null, "head");
    
assignments_options.domAPI = (styleDomAPI_default()());
assignments_options.insertStyleElement = (insertStyleElement_default()());

var assignments_update = injectStylesIntoStyleTag_default()()(assignments/* default */.A, assignments_options);




       /* harmony default export */ const src_assignments = (assignments/* default */.A && assignments/* default */.A.locals ? assignments/* default */.A.locals : undefined);

;// ./src/assignments.js
// The course's Assignment List, in a student's JupyterLab on the course's JupyterHub: the assignments released in
// nbgrader's exchange (Fetch), those fetched into the student's folder with their notebooks (open, Validate,
// Submit) and those handed in with each hand-in's feedback (Fetch feedback, view it). It replaces nbgrader's own
// panel (@jupyter/nbgrader:assignment-list, and its Nbgrader menu, which the hub's page config disables for
// students) so that the panel speaks the edition's language, and calls the same handlers of nbgrader's server
// extension (GET courses and assignments?course_id=, POST assignments/fetch, assignments/submit,
// assignments/fetch_feedback: each answers {success, value}, value the course's whole list again where it
// succeeded) and, for a notebook's Validate, the toolbar button's request and dialog (validation.js). Every word
// it shows is one the server extension posref_jupyter.assignment_list put in the page (`posrefAssignments`),
// or, for Validate, posref_jupyter.validate (`posrefValidate`), from posref's catalogs; this file holds none.





const OPEN = 'posref:open-assignment-list';

/** The panel's sections, one per status of nbgrader's (in the order it lists them): its heading, and what an empty one says. */
function sections(texts) {
  return {
    released: { heading: texts.released, empty: texts.no_released },
    fetched: { heading: texts.fetched, empty: texts.no_fetched },
    submitted: { heading: texts.submitted, empty: texts.no_submitted }
  };
}

/** What a dialog says where nbgrader could not do what a button asked, per route: [its title, its sentence]. */
function refusals(texts) {
  return {
    'assignments/fetch': [texts.not_fetched_title, texts.not_fetched],
    'assignments/submit': [texts.not_submitted_title, texts.not_submitted],
    'assignments/fetch_feedback': [texts.no_feedback_title, texts.no_feedback]
  };
}

function assignments_button(label, onClick, className = 'jp-mod-styled jp-mod-accept') {
  const node = validation_element('button', label, `jp-Button ${className}`);
  node.onclick = onClick;
  return node;
}

/** The panel's content: the course (a choice where the exchange has several), then one section per status. */
class AssignmentList extends widgets_2_3_1_alpha_singleton_.Widget {
  constructor(app, texts, words) {
    super();
    this.app = app;
    this.texts = texts;
    this.words = words;
    this.course = undefined;
    this.addClass('posref-assignments');
    const bar = validation_element('div', '', 'posref-assignments-bar');
    this.courses = document.createElement('select');
    this.courses.className = 'posref-assignments-course';
    this.courses.onchange = () => this.load(this.courses.value);
    this.courseLabel = validation_element('label', texts.course);
    this.courseLabel.append(this.courses);
    this.courseLabel.hidden = true;
    const refresh = assignments_button(texts.refresh, () => this.refresh(), 'jp-mod-styled posref-assignments-refresh');
    bar.append(this.courseLabel, refresh);
    this.node.append(bar);
    this.sections = sections(texts);
    this.lists = {};
    for (const [status, { heading }] of Object.entries(this.sections)) {
      const section = validation_element('section', '', `posref-assignments-${status}`);
      const list = validation_element('div', '', 'posref-assignments-items');
      section.append(validation_element('h2', heading), list);
      this.node.append(section);
      this.lists[status] = list;
    }
    this.refresh();
  }

  /** Every list shows `text` alone (`className`: posref-assignments-loading, -error, -empty), `detail` under it. */
  showAll(text, className, detail) {
    for (const list of Object.values(this.lists)) {
      list.replaceChildren(validation_element('p', text, className));
      if (detail !== undefined) {
        list.append(validation_element('pre', String(detail), 'posref-assignments-detail'));
      }
    }
  }

  /** The exchange's courses, then the chosen one's assignments. */
  async refresh() {
    this.showAll(this.texts.loading, 'posref-assignments-loading');
    let reply;
    try {
      reply = await request('courses');
    } catch (error) {
      this.showAll(fill(this.texts.cannot_reach, { error }), 'posref-assignments-error');
      return;
    }
    if (reply.success !== true) {
      this.showAll(this.texts.cannot_list, 'posref-assignments-error', reply.value);
      return;
    }
    const courses = reply.value;
    if (courses.length === 0) {
      this.showAll(this.texts.no_courses, 'posref-assignments-empty');
      return;
    }
    this.courses.replaceChildren(...courses.map(id => validation_element('option', id)));
    this.courseLabel.hidden = courses.length < 2;
    const course = courses.includes(this.course) ? this.course : courses[0];
    this.courses.value = course;
    await this.load(course);
  }

  /** The assignments of `course`. */
  async load(course) {
    this.course = course;
    this.showAll(this.texts.loading, 'posref-assignments-loading');
    await this.act(() => request('assignments?' + new URLSearchParams({ course_id: course })), { listing: true });
  }

  /**
   * `call`'s answer shown: nbgrader's list; where nbgrader refused what a button asked (it answers with its reason or
   * error, not the list), `refused(that)`, a dialog, the list shown staying; while `listing`, its error in every
   * section. No answer at all is said in every section while `listing` (nothing is listed yet), in a dialog after a
   * button (the list shown stays).
   */
  async act(call, { refused, listing } = {}) {
    let reply;
    try {
      reply = await call();
    } catch (error) {
      const said = fill(this.texts.cannot_reach, { error });
      if (listing) {
        this.showAll(said, 'posref-assignments-error');
      } else {
        await tell(this.texts.error_title, said, this.words);
      }
      return;
    }
    if (reply.success === true) {
      this.show(reply.value);
    } else if (refused) {
      await refused(reply.value);
    } else {
      this.showAll(this.texts.cannot_list, 'posref-assignments-error', reply.value);
    }
  }

  /** nbgrader's list of `assignments`, each in its status's section (a status nbgrader adds, `removed`, is not). */
  show(assignments) {
    for (const [status, { empty: said }] of Object.entries(this.sections)) {
      const items = assignments.filter(a => a.status === status).map(a => this.item(a));
      const empty = validation_element('p', said, 'posref-assignments-empty');
      this.lists[status].replaceChildren(...(items.length ? items : [empty]));
    }
  }

  item(assignment) {
    const node = validation_element('div', '', 'posref-assignment');
    node.dataset.assignment = assignment.assignment_id;
    const row = validation_element('div', '', 'posref-assignment-row');
    const name = validation_element('span', assignment.assignment_id, 'posref-assignment-name');
    row.append(name);
    node.append(row);
    const course = { course_id: assignment.course_id, assignment_id: assignment.assignment_id };
    const texts = this.texts;
    if (assignment.status === 'released') {
      row.append(this.action(texts.fetch, texts.fetching, 'assignments/fetch', course));
    } else if (assignment.status === 'fetched') {
      const notebooks = validation_element('ul', '', 'posref-assignment-notebooks');
      for (const notebook of assignment.notebooks) {
        notebooks.append(this.notebook(notebook));
      }
      row.append(this.action(texts.submit, texts.submitting, 'assignments/submit', course));
      node.append(notebooks);
    } else {
      row.append(this.action(texts.fetch_feedback, texts.fetching_feedback, 'assignments/fetch_feedback', course));
      const submissions = validation_element('ul', '', 'posref-assignment-submissions');
      for (const submission of assignment.submissions) {
        submissions.append(this.submission(submission));
      }
      node.append(submissions);
    }
    return node;
  }

  /**
   * A button that POSTs `body` to `route`, saying `busy` meanwhile, and shows the list nbgrader answers, or in a
   * dialog what nbgrader says where it could not (`refusals`: each route's title and sentence).
   */
  action(label, busy, route, body) {
    const [title, sentence] = refusals(this.texts)[route];
    const refused = async reason => {
      const said = document.createElement('div');
      said.append(validation_element('p', sentence), validation_element('pre', String(reason)));
      await tell(title, new widgets_2_3_1_alpha_singleton_.Widget({ node: said }), this.words);
    };
    const node = assignments_button(label, async () => {
      node.textContent = busy;
      node.disabled = true;
      try {
        await this.act(() => request(route, body), { refused });
      } finally {
        node.textContent = label;
        node.disabled = false;
      }
    });
    return node;
  }

  /** A fetched notebook: its name opens it, its Validate validates the saved file. */
  notebook(notebook) {
    const node = validation_element('li', '', 'posref-assignment-notebook');
    const open = validation_element('a', notebook.notebook_id, 'posref-assignment-open');
    open.href = '#';
    open.onclick = event => {
      event.preventDefault();
      this.app.commands.execute('docmanager:open', { path: notebook.path });
    };
    const words = this.words;
    const validate = assignments_button(
      words.validate,
      async () => {
        const say = (label, enabled) => {
          validate.textContent = label;
          validate.disabled = !enabled;
        };
        const passed = await validateAndShow(notebook.path, words, say);
        validate.classList.toggle('posref-passed', passed);
        validate.classList.toggle('posref-failed', !passed);
      },
      'jp-mod-styled posref-assignment-validate'
    );
    node.append(open, validate);
    return node;
  }

  /** One hand-in: when, and its feedback where there is some (fetched: a link to its folder). */
  submission(submission) {
    const node = validation_element('li', submission.timestamp, 'posref-assignment-submission');
    if (submission.has_local_feedback && !submission.feedback_updated) {
      const view = validation_element('a', this.texts.view_feedback, 'posref-assignment-feedback');
      view.href = '#';
      view.onclick = event => {
        event.preventDefault();
        this.app.commands.execute('filebrowser:go-to-path', { path: submission.local_feedback_path });
      };
      node.append(' ', view);
    } else if (submission.has_exchange_feedback) {
      node.append(' ', validation_element('span', this.texts.feedback_ready, 'posref-assignment-feedback-ready'));
    }
    return node;
  }
}

/** The panel, its command and its place in the menu bar (the course's pages name it Nbgrader → Assignment List). */
function addAssignmentList(app, texts, words, mainMenu, palette, restorer) {
  const tracker = new apputils_4_7_singleton_.WidgetTracker({ namespace: 'posref-assignment-list' });
  let panel;
  app.commands.addCommand(OPEN, {
    label: texts.assignment_list,
    execute: () => {
      if (!panel || panel.isDisposed) {
        panel = new apputils_4_7_singleton_.MainAreaWidget({ content: new AssignmentList(app, texts, words) });
        panel.id = 'posref-assignment-list';
        panel.title.label = texts.assignment_list;
        panel.title.closable = true;
      }
      if (!tracker.has(panel)) {
        tracker.add(panel);
      }
      if (!panel.isAttached) {
        app.shell.add(panel, 'main');
      }
      app.shell.activateById(panel.id);
    }
  });
  if (mainMenu) {
    const menu = new widgets_2_3_1_alpha_singleton_.Menu({ commands: app.commands });
    menu.id = 'posref-mainmenu-nbgrader';
    menu.title.label = texts.menu;
    menu.addItem({ command: OPEN });
    mainMenu.addMenu(menu);
  }
  if (palette) {
    palette.addItem({ command: OPEN, category: texts.menu });
  }
  if (restorer) {
    restorer.restore(tracker, { command: OPEN, name: () => 'posref-assignment-list' });
  }
}


// EXTERNAL MODULE: consume shared module (default) @lumino/disposable@^2.0.0 (singleton)
var disposable_2_0_singleton_ = __webpack_require__(12);
;// ./src/button.js
// The course's Validate button on a notebook's toolbar: it saves the notebook, then validates it and shows what
// nbgrader found (validation.js). It replaces nbgrader's own button (@jupyter/nbgrader:validate-assignment, which
// the student's page config disables) so that the dialog speaks the edition's language.




class ValidateButton extends apputils_4_7_singleton_.ToolbarButton {
  constructor(panel, words) {
    super({
      className: 'validate-button',
      label: words.validate,
      tooltip: words.tooltip,
      onClick: () => this.run()
    });
    this.panel = panel;
    this.words = words;
  }

  say(label, enabled) {
    this.props.label = label;
    this.enabled = enabled;
    this.update();
  }

  /** Save (nbgrader validates the file on disk), validate, show what nbgrader found. */
  async run() {
    const words = this.words;
    this.say(words.saving, false);
    try {
      await this.panel.context.save();
    } catch {
      this.say(words.validate, true);
      await tell(words.failed_title, words.cannot_save, words);
      return;
    }
    await validateAndShow(this.panel.context.path, words, (label, enabled) => this.say(label, enabled));
  }
}

/** The button on each notebook's toolbar, before its spacer. */
function addValidateButton(app, words) {
  app.docRegistry.addWidgetExtension('Notebook', {
    createNew: panel => {
      const button = new ValidateButton(panel, words);
      let index = 0;
      for (const item of panel.toolbar.children()) {
        if (item.node.classList.contains('jp-Toolbar-spacer')) {
          break;
        }
        index++;
      }
      panel.toolbar.insertItem(index, 'validate', button);
      return new disposable_2_0_singleton_.DisposableDelegate(() => button.dispose());
    }
  });
}

;// ./src/index.js
// The course's own JupyterLab extension in a student's JupyterLab: the notebook toolbar's Validate button
// (button.js), and, on the course's JupyterHub, the Assignment List (assignments.js). Each replaces nbgrader's own
// plugin (@jupyter/nbgrader:validate-assignment; @jupyter/nbgrader:assignment-list and :menu), which the
// student's page config disables, so that what it says is the edition's language: every word comes from the page
// config, where the server extensions posref_jupyter.validate (`posrefValidate`) and
// posref_jupyter.assignment_list (`posrefAssignments`) put posref's catalogs' words; no file here holds one.
// Built by `make labextension`.







const VALIDATE = 'posrefValidate';
const ASSIGNMENTS = 'posrefAssignments';

function missing(option, extension) {
  console.error(`posref: no ${option} in the page (is the server extension ${extension} off?)`);
}

const validateButton = {
  id: '@posref/validate:plugin',
  description: "The course's Validate button, speaking the edition's language",
  autoStart: true,
  activate: app => {
    const words = pageWords(VALIDATE);
    if (words === null) {
      missing(VALIDATE, 'posref_jupyter.validate');
      return;
    }
    addValidateButton(app, words);
  }
};

const assignmentList = {
  id: '@posref/validate:assignment-list',
  description: "The course's panel of nbgrader's exchange (fetch, validate, submit), speaking the edition's language",
  autoStart: true,
  optional: [mainmenu_4_6_singleton_.IMainMenu, apputils_4_7_singleton_.ICommandPalette, application_4_6_singleton_.ILayoutRestorer],
  activate: (app, mainMenu, palette, restorer) => {
    const words = pageWords(VALIDATE);
    const texts = pageWords(ASSIGNMENTS);
    if (words === null || texts === null) {
      missing(words === null ? VALIDATE : ASSIGNMENTS, 'posref_jupyter.validate or posref_jupyter.assignment_list');
      return;
    }
    addAssignmentList(app, texts, words, mainMenu, palette, restorer);
  }
};

/* harmony default export */ const src = ([validateButton, assignmentList]);


/***/ }

}]);