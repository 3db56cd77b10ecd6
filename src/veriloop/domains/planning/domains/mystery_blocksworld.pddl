; "Mystery" Blocksworld, written for veriloop: the four Blocksworld operators with every
; name replaced by an unrelated word, so that a solver cannot lean on what the words
; usually mean. The correspondence (kept here, never shown to a model):
;   province = clear    planet = ontable    harmony = handempty
;   pain     = holding  craves = on
;   attack = pick-up    succumb = put-down  overcome = stack    feast = unstack
; The names match PlanBench's obfuscated problem files.
(define (domain mystery-4ops)
  (:requirements :strips)
  (:predicates
    (province ?o)
    (planet ?o)
    (harmony)
    (pain ?o)
    (craves ?o ?other))

  (:action attack
    :parameters (?o)
    :precondition (and (province ?o) (planet ?o) (harmony))
    :effect (and (pain ?o)
                 (not (province ?o)) (not (planet ?o)) (not (harmony))))

  (:action succumb
    :parameters (?o)
    :precondition (pain ?o)
    :effect (and (planet ?o) (province ?o) (harmony)
                 (not (pain ?o))))

  (:action overcome
    :parameters (?o ?other)
    :precondition (and (pain ?o) (province ?other))
    :effect (and (craves ?o ?other) (province ?o) (harmony)
                 (not (pain ?o)) (not (province ?other))))

  (:action feast
    :parameters (?o ?other)
    :precondition (and (craves ?o ?other) (province ?o) (harmony))
    :effect (and (pain ?o) (province ?other)
                 (not (craves ?o ?other)) (not (province ?o)) (not (harmony)))))
